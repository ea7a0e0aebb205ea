#include "core/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "core/config.hpp"
#include "core/lookup.hpp"

namespace asynctp::core {
namespace {

constexpr Entry<LogLevel, const char*> kLevelNames[] = {
    {LogLevel::warn, "WARN"}, {LogLevel::info, "INFO"}, {LogLevel::trace, "TRACE"}};

const char* level_name(LogLevel level) { return lookup(kLevelNames, level, "?"); }

LogLevel read_level() {
  const auto text = process_env("ASYNCTP_DEBUG");
  if (!text) return LogLevel::warn;
  if (const auto level = key_named(kLevelNames, *text)) return *level;
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
