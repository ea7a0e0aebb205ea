#include "cpu/process_id.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>

#include "asynctp/error.hpp"

namespace asynctp::cpu {
namespace {

constexpr char kPrefix[] = "asynctp-cpu-shm-1:";
constexpr std::size_t kPrefixBytes = sizeof kPrefix - 1;
// Well under NAME_MAX with the segment names' other parts.
constexpr std::size_t kMaxTokenBytes = 64;

bool token_ok(const std::string& token) {
  if (token.empty() || token.size() > kMaxTokenBytes) return false;
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

[[noreturn]] void bad_id() {
  throw Error(ErrorCode::invalid_argument,
              "id: not an id made by asynctp::cpu::make_unique_id (its bytes must reach every "
              "rank unchanged)");
}

std::string hex(std::uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int shift = 60; shift >= 0; shift -= 4) out += digits[(value >> shift) & 15];
  return out;
}

}  // namespace

UniqueId new_unique_id() {
  std::random_device device;
  std::seed_seq seed{
      device(), device(), static_cast<unsigned>(::getpid()),
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count())};
  std::mt19937_64 rng(seed);
  return unique_id_from_token(hex(static_cast<std::uint64_t>(::getpid())) + "-" + hex(rng()) +
                              hex(rng()));
}

UniqueId unique_id_from_token(const std::string& token) {
  if (!token_ok(token)) bad_id();
  UniqueId id{};
  std::memcpy(id.bytes, kPrefix, kPrefixBytes);
  std::memcpy(id.bytes + kPrefixBytes, token.data(), token.size());
  return id;
}

std::string segment_token(const std::string& file_name) {
  const std::string prefix = "asynctp.";
  const auto dot = file_name.rfind('.');
  if (file_name.compare(0, prefix.size(), prefix) != 0 || dot == std::string::npos ||
      dot < prefix.size()) {
    return "";
  }
  const std::string suffix = file_name.substr(dot + 1);
  const bool data = suffix.size() >= 2 && suffix.size() <= 11 && suffix[0] == 'd' &&
                    suffix.find_first_not_of("0123456789", 1) == std::string::npos;
  if (suffix != "ctl" && !data) return "";
  std::string token = file_name.substr(prefix.size(), dot - prefix.size());
  return token_ok(token) ? token : "";
}

SegmentNames segment_names(const UniqueId& id) {
  if (std::memcmp(id.bytes, kPrefix, kPrefixBytes) != 0) bad_id();
  const char* text = id.bytes + kPrefixBytes;
  const std::size_t length = strnlen(text, sizeof id.bytes - kPrefixBytes);
  if (length == sizeof id.bytes - kPrefixBytes) bad_id();  // no terminating NUL
  std::string token(text, length);
  if (!token_ok(token)) bad_id();
  return {token};
}

}  // namespace asynctp::cpu
