// asynctp: subcommand dispatch and the mapping of failures to exit statuses
// (0 success, 1 library error, missing GPU or failed check, 2 bad usage), so
// scripts can tell a typo from a wrong result.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "args.hpp"
#include "asynctp/error.hpp"
#include "measure.hpp"

namespace {

using namespace asynctp::tool;

int usage_error(const std::string& context, const std::string& message, const std::string& help) {
  std::fprintf(stderr, "%s: %s\nTry '%s'.\n", context.c_str(), message.c_str(), help.c_str());
  return 2;
}

// The command as the report's header repeats it, quoted where a shell would need it.
std::string join(int argc, char** argv) {
  std::string out = "asynctp";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const bool plain = !word.empty() && word.find_first_of(" \t'\"$\\") == std::string::npos;
    out += " " + (plain ? word : "'" + word + "'");
  }
  return out;
}

int subcommand_main(Command command, int argc, char** argv) {
  const std::string name = std::string("asynctp ") + to_string(command);
  try {
    const Args args = parse_args(command, std::vector<std::string>(argv + 2, argv + argc));
    if (args.help) {
      std::fputs(help_of(command).c_str(), stdout);
      return 0;
    }
    return command == Command::run ? run_command(args, join(argc, argv))
                                   : bench_command(args, join(argc, argv));
  } catch (const UsageError& e) {
    return usage_error(name, e.what(), name + " --help");
  } catch (const asynctp::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "%s: out of memory allocating the buffers; try smaller -m/-n/-k or --world-size\n",
                 name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", name.c_str(), e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc < 2 ? "" : argv[1];
  if (command == "run") return subcommand_main(Command::run, argc, argv);
  if (command == "bench") return subcommand_main(Command::bench, argc, argv);
  if (command == "--version") {
    const std::string gpu = gpu_runtime();
    std::printf("asynctp %s\nGPU backend: %s\n", kVersion, gpu.empty() ? "none" : gpu.c_str());
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help" || argc < 2) {
    std::fputs(main_help().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;  // no command at all is bad usage
  }
  return usage_error("asynctp", "unknown command '" + command + "' (the commands are: run, bench)",
                     "asynctp --help");
}
