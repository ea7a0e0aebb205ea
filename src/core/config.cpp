#include "core/config.hpp"

#include <cstdlib>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::core {
namespace {

constexpr std::int64_t kMaxTile = 4096;

std::int64_t pick(const std::optional<std::int64_t>& from_options, const char* option_name,
                  const EnvLookup& env, const char* env_name, std::int64_t fallback,
                  bool* was_set) {
  if (from_options) {
    if (*from_options <= 0) {
      throw Error(ErrorCode::invalid_argument, std::string("options.") + option_name +
                                                   ": must be a positive integer, got " +
                                                   std::to_string(*from_options));
    }
    *was_set = true;
    return *from_options;
  }
  if (auto text = env(env_name)) {
    *was_set = true;
    return parse_positive_int(*text, env_name);
  }
  *was_set = false;
  return fallback;
}

std::optional<std::int64_t> pick_tile(const std::optional<std::int64_t>& from_options,
                                      const char* option_name, const EnvLookup& env,
                                      const char* env_name) {
  bool set = false;
  const std::int64_t value = pick(from_options, option_name, env, env_name, 0, &set);
  if (!set) return std::nullopt;
  if (value % 8 != 0 || value > kMaxTile) {
    throw Error(ErrorCode::invalid_argument,
                std::string(from_options ? std::string("options.") + option_name : env_name) +
                    ": tile size must be a multiple of 8 and at most " + std::to_string(kMaxTile) +
                    ", got " + std::to_string(value));
  }
  return value;
}

}  // namespace

std::optional<std::string> process_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<std::int64_t> parse_integer(const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return value;
}

std::int64_t parse_positive_int(const std::string& text, const std::string& what) {
  const std::optional<std::int64_t> value = parse_integer(text);
  if (!value || *value <= 0) {
    throw Error(ErrorCode::invalid_argument,
                what + ": must be a positive integer, got '" + text + "'");
  }
  return *value;
}

ResolvedOptions resolve_options(const Options& options, const EnvLookup& env) {
  ResolvedOptions resolved;
  if (options.algorithm) {
    resolved.algorithm = *options.algorithm;
  } else if (auto text = env("ASYNCTP_ALGO")) {
    resolved.algorithm = parse_algorithm(*text, "ASYNCTP_ALGO");
  }
  resolved.algorithm_forced = resolved.algorithm != Algorithm::automatic;

  bool set = false;
  resolved.wait_timeout_ms = pick(options.wait_timeout_ms, "wait_timeout_ms", env,
                                  "ASYNCTP_WAIT_TIMEOUT_MS", kDefaultWaitTimeoutMs, &set);
  resolved.tile_m = pick_tile(options.tile_m, "tile_m", env, "ASYNCTP_TILE_M");
  resolved.tile_n = pick_tile(options.tile_n, "tile_n", env, "ASYNCTP_TILE_N");
  if (options.native_tail) {
    resolved.native_tail = *options.native_tail;
  } else if (auto text = env("ASYNCTP_NATIVE_TAIL")) {
    resolved.native_tail = parse_native_tail(*text, "ASYNCTP_NATIVE_TAIL");
  }
  resolved.tune = resolve_tune(options, env);
  return resolved;
}

bool resolve_tune(const Options& options, const EnvLookup& env) {
  if (options.tune) return *options.tune;
  const std::optional<std::string> text = env("ASYNCTP_TUNE");
  if (!text || *text == "off") return false;
  if (*text == "on") return true;
  throw Error(ErrorCode::invalid_argument,
              "ASYNCTP_TUNE: must be 'on' or 'off', got '" + *text + "'");
}

}  // namespace asynctp::core

namespace asynctp {

bool measured_choice_on(const Options& options) { return core::resolve_tune(options); }

}  // namespace asynctp
