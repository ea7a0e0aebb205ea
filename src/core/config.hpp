// Resolution of per-call options against the ASYNCTP_* environment. Options
// set in code win; then the environment; then the defaults below. The
// environment is read through a lookup function so tests can supply their own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "asynctp/options.hpp"

namespace asynctp::core {

inline constexpr std::int64_t kDefaultWaitTimeoutMs = 60'000;

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// Reads the real process environment.
std::optional<std::string> process_env(const char* name);

struct ResolvedOptions {
  Algorithm algorithm = Algorithm::automatic;
  bool algorithm_forced = false;  // true when native/pipelined/decomposed was asked for
  std::int64_t wait_timeout_ms = kDefaultWaitTimeoutMs;
  std::optional<std::int64_t> tile_m;  // overrides the backend's default tile
  std::optional<std::int64_t> tile_n;
  NativeTail native_tail = NativeTail::automatic;  // kernel or library: forced
  // ASYNCTP_TUNE=on: auto measures the algorithms the group can run on a
  // problem's first calls and keeps the fastest (core/tuning.hpp).
  bool tune = false;
};

// Throws Error(invalid_argument) naming the option or variable and its rule.
ResolvedOptions resolve_options(const Options& options, const EnvLookup& env = process_env);

// ResolvedOptions::tune alone: options.tune, else ASYNCTP_TUNE (on/off).
bool resolve_tune(const Options& options, const EnvLookup& env = process_env);

// The whole of `text` as a base-10 integer; nullopt when it is not one (empty,
// other characters, out of int64 range).
std::optional<std::int64_t> parse_integer(const std::string& text);

// Parses a positive integer setting; throws Error naming `what`.
std::int64_t parse_positive_int(const std::string& text, const std::string& what);

}  // namespace asynctp::core
