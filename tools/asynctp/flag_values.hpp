// The pieces every subcommand's parser shares: splitting argv into flags and
// values, and strict parsers for numbers and enumerations that throw a
// UsageError naming the flag, the rule and what was given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "usage_error.hpp"

namespace asynctp::tool {

[[noreturn]] void fail(const std::string& flag, const std::string& rule);

// Which words a subcommand knows: flags that take a value (`--x V` or
// `--x=V`; short flags only `-x V`) and switches (no value).
struct FlagSpec {
  std::vector<std::string> valued;
  std::vector<std::string> switches;
};

// Calls on_flag(flag, value) for each flag in order; value is nullopt for a
// switch. Throws UsageError for an unknown flag, a missing value or a value
// given to a switch.
void for_each_flag(const std::vector<std::string>& args, const FlagSpec& spec,
                   const std::function<void(const std::string& flag,
                                            const std::optional<std::string>& value)>& on_flag);

// Strict decimal parse: the whole text must be an integer within [lo, hi].
std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t lo,
                       std::int64_t hi, const std::string& rule);
std::int64_t parse_positive(const std::string& flag, const std::string& text, std::int64_t hi);
std::uint64_t parse_seed(const std::string& flag, const std::string& text);
// A finite number > 0 and <= hi.
double parse_positive_real(const std::string& flag, const std::string& text, double hi);

}  // namespace asynctp::tool
