// `asynctp run`: data, planner, per-algorithm check and timing, trace, report.
#pragma once

#include <string>

#include "cli_args.hpp"

namespace asynctp::tool {

// Returns the exit status (0, or 1 when --check found a wrong result). Throws
// UsageError for input the machine cannot take, asynctp::Error from the library.
int run_command(RunArgs args, const std::string& command_line);

}  // namespace asynctp::tool
