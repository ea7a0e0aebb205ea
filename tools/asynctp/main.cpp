// asynctp: subcommand dispatch and the mapping of failures to exit statuses
// (0 success, 1 library error or failed check, 2 bad usage), so scripts can
// tell a typo from a wrong result.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "cli_args.hpp"
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

int run_main(int argc, char** argv) {
  using namespace asynctp::tool;
  std::vector<std::string> rest(argv + 2, argv + argc);
  RunArgs args;
  try {
    args = parse_run_args(rest);
  } catch (const UsageError& e) {
    return usage_error("asynctp run", e.what(), "asynctp run --help");
  }
  if (args.help) {
    std::fputs(run_help().c_str(), stdout);
    return 0;
  }
  try {
    return run_command(args, join(argc, argv));
  } catch (const UsageError& e) {
    return usage_error("asynctp run", e.what(), "asynctp run --help");
  } catch (const asynctp::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "asynctp run: %s\n", e.what());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "asynctp run: out of memory allocating the buffers; try smaller -m/-n/-k "
                 "or --world-size\n");
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
    std::puts("asynctp " ASYNCTP_VERSION);
    return 0;
  }
  if (command == "run") {
    try {
      return run_main(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "asynctp run: internal error: %s\n", e.what());
      return kExitFailure;
    }
  }
  return usage_error("asynctp", "unknown command '" + command + "' (the command is: run)",
                     "asynctp --help");
}
