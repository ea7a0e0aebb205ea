// Logging in NCCL's style: ASYNCTP_DEBUG=WARN|INFO|TRACE, lines prefixed
// "host:pid:tid [rank] asynctp LEVEL". Off unless asked for; warnings always.
#pragma once

#include <string>

namespace asynctp::core {

enum class LogLevel { warn = 1, info = 2, trace = 3 };

// The level from ASYNCTP_DEBUG, read once. An unknown value logs a warning
// naming the variable and falls back to WARN.
LogLevel log_level();
bool log_enabled(LogLevel level);
void log(LogLevel level, int rank, const std::string& message);

}  // namespace asynctp::core
