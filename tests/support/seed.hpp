// Per-case random seeds. Every run draws fresh inputs (the base seed comes
// from std::random_device), so repeated runs explore new data; a failure
// prints the base seed and ASYNCTP_TEST_SEED=<base> replays exactly that run.
// Each case mixes its own label into the base so no two cases share inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>

namespace asynctp_test {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline std::uint64_t base_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* text = std::getenv("ASYNCTP_TEST_SEED")) return std::strtoull(text, nullptr, 0);
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }();
  return seed;
}

inline std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("?");
}

// A seed for one case: the current test's full name plus `label`.
struct Seed {
  explicit Seed(const std::string& label = "")
      : label(current_test_name() + (label.empty() ? "" : "/" + label)),
        value(splitmix64(base_seed() ^ std::hash<std::string>{}(this->label))) {}

  std::string note() const {
    std::ostringstream s;
    s << "case " << label << " seed 0x" << std::hex << value << std::dec
      << " (replay with ASYNCTP_TEST_SEED=" << base_seed() << ")";
    return s.str();
  }
  std::mt19937_64 rng() const { return std::mt19937_64(value); }

  std::string label;
  std::uint64_t value;
};

// A uniformly drawn integer in [lo, hi].
inline std::int64_t draw(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

}  // namespace asynctp_test
