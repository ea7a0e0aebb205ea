#include "core/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "core/config.hpp"

namespace asynctp::core {
namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::warn:
      return "WARN";
    case LogLevel::info:
      return "INFO";
    case LogLevel::trace:
      return "TRACE";
  }
  return "?";
}

LogLevel read_level() {
  const auto text = process_env("ASYNCTP_DEBUG");
  if (!text || *text == "WARN") return LogLevel::warn;
  if (*text == "INFO") return LogLevel::info;
  if (*text == "TRACE") return LogLevel::trace;
  std::fprintf(stderr, "asynctp WARN ASYNCTP_DEBUG: must be WARN, INFO or TRACE, got '%s'\n",
               text->c_str());
  return LogLevel::warn;
}

}  // namespace

LogLevel log_level() {
  static const LogLevel level = read_level();
  return level;
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(log_level());
}

void log(LogLevel level, int rank, const std::string& message) {
  if (!log_enabled(level)) return;
  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  const auto tid = std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000;
  std::fprintf(stderr, "%s:%d:%zu [%d] asynctp %s %s\n", host, static_cast<int>(getpid()), tid,
               rank, level_name(level), message.c_str());
}

}  // namespace asynctp::core
