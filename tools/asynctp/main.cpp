// asynctp: subcommand dispatch and the mapping of failures to exit statuses
// (0 success, 1 library error, missing GPU or failed check, 2 bad usage), so
// scripts can tell a typo from a wrong result.
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "bench_args.hpp"
#include "cli_args.hpp"
#include "gpu_entry.hpp"
#include "help.hpp"
#include "run_command.hpp"

#ifndef ASYNCTP_VERSION
#define ASYNCTP_VERSION "unknown"
#endif

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int usage_error(const std::string& context, const std::string& message, const char* help_cmd) {
  std::fprintf(stderr, "%s: %s\nTry '%s'.\n", context.c_str(), message.c_str(), help_cmd);
  return kExitUsage;
}

std::string join(int argc, char** argv) {
  std::string out = "asynctp";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const bool plain = !word.empty() && word.find_first_of(" \t'\"$\\") == std::string::npos;
    out += " " + (plain ? word : "'" + word + "'");
  }
  return out;
}

// One subcommand: its parser, its help text and its body.
template <typename Args>
struct Subcommand {
  const char* name;      // "asynctp run"
  const char* help_cmd;  // "asynctp run --help"
  Args (*parse)(const std::vector<std::string>&);
  std::string (*help)();
  std::function<int(Args, const std::string&)> body;
};

template <typename Args>
int subcommand_main(const Subcommand<Args>& sub, int argc, char** argv) {
  using namespace asynctp::tool;
  std::vector<std::string> rest(argv + 2, argv + argc);
  Args args;
  try {
    args = sub.parse(rest);
  } catch (const UsageError& e) {
    return usage_error(sub.name, e.what(), sub.help_cmd);
  }
  if (args.help) {
    std::fputs(sub.help().c_str(), stdout);
    return 0;
  }
  try {
    return sub.body(args, join(argc, argv));
  } catch (const UsageError& e) {
    return usage_error(sub.name, e.what(), sub.help_cmd);
  } catch (const asynctp::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", sub.name, e.what());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "%s: out of memory allocating the buffers; try smaller -m/-n/-k or "
                 "--world-size\n",
                 sub.name);
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", sub.name, e.what());
    return kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace asynctp::tool;
  if (argc < 2) {
    std::fputs(main_help().c_str(), stderr);
    return kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(main_help().c_str(), stdout);
    return 0;
  }
  if (command == "--version") {
    const std::string gpu = asynctp::tool::gpu_entry::runtime();
    std::printf("asynctp %s\nGPU backend: %s\n", ASYNCTP_VERSION,
                gpu.empty() ? "none" : gpu.c_str());
    return 0;
  }
  if (command == "run") {
    return subcommand_main(Subcommand<RunArgs>{"asynctp run", "asynctp run --help", parse_run_args,
                                               run_help, run_command},
                           argc, argv);
  }
  if (command == "bench") {
    return subcommand_main(Subcommand<BenchArgs>{"asynctp bench", "asynctp bench --help",
                                                 parse_bench_args, bench_help, gpu_entry::bench},
                           argc, argv);
  }
  return usage_error("asynctp", "unknown command '" + command + "' (the commands are: run, bench)",
                     "asynctp --help");
}
