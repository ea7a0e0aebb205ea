#include "flag_values.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/config.hpp"

namespace asynctp::tool {
namespace {

bool listed(const std::vector<std::string>& names, const std::string& flag) {
  return std::find(names.begin(), names.end(), flag) != names.end();
}

}  // namespace

void fail(const std::string& flag, const std::string& rule) {
  throw UsageError(flag + ": " + rule);
}

void for_each_flag(const std::vector<std::string>& args, const FlagSpec& spec,
                   const std::function<void(const std::string& flag,
                                            const std::optional<std::string>& value)>& on_flag) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    // --name=value is accepted for long flags; short ones take a separate word.
    if (flag.rfind("--", 0) == 0) {
      const auto eq = flag.find('=');
      if (eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
      }
    }
    if (listed(spec.switches, flag)) {
      if (value) fail(flag, "takes no value, got '" + *value + "'");
      on_flag(flag, std::nullopt);
      continue;
    }
    if (!listed(spec.valued, flag)) throw UsageError("unknown flag '" + flag + "'");
    if (!value) {
      if (i + 1 >= args.size()) fail(flag, "missing value");
      value = args[++i];
    }
    on_flag(flag, value);
  }
}

std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t lo,
                       std::int64_t hi, const std::string& rule) {
  // core::parse_integer, as the library's settings parse, but no leading blank.
  const std::optional<std::int64_t> value =
      text.empty() || text[0] == ' ' ? std::nullopt : core::parse_integer(text);
  if (!value || *value < lo || *value > hi) fail(flag, rule + ", got '" + text + "'");
  return *value;
}

std::int64_t parse_positive(const std::string& flag, const std::string& text, std::int64_t hi) {
  return parse_int(flag, text, 1, hi,
                   "must be a positive integer (at most " + std::to_string(hi) + ")");
}

std::uint64_t parse_seed(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == '-' || text[0] == '+' ||
      text[0] == ' ') {
    fail(flag, "must be a non-negative integer below 2^64, got '" + text + "'");
  }
  return value;
}

double parse_positive_real(const std::string& flag, const std::string& text, double hi) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  // `!(value > 0)` also rejects NaN.
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == ' ' || !std::isfinite(value) ||
      !(value > 0) || value > hi) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", hi);
    fail(flag, std::string("must be a number > 0 (at most ") + bound + "), got '" + text + "'");
  }
  return value;
}

}  // namespace asynctp::tool
