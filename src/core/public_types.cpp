// Names and small helpers of the public value types.
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"
#include "core/lookup.hpp"

namespace asynctp {
namespace {

using core::Entry;

constexpr Entry<ErrorCode, const char*> kErrorCodeNames[] = {
    {ErrorCode::invalid_argument, "invalid argument"}, {ErrorCode::unsupported, "unsupported"},
    {ErrorCode::timeout, "timeout"},                   {ErrorCode::mismatch, "rank mismatch"},
    {ErrorCode::backend, "backend error"}};
constexpr Entry<DType, const char*> kDTypeNames[] = {
    {DType::bf16, "bf16"}, {DType::fp16, "fp16"}, {DType::fp32, "fp32"}};
constexpr Entry<DeviceKind, const char*> kDeviceKindNames[] = {
    {DeviceKind::cpu, "cpu"}, {DeviceKind::cuda, "cuda"}, {DeviceKind::hip, "hip"}};
constexpr Entry<Algorithm, const char*> kAlgorithmNames[] = {
    {Algorithm::automatic, "auto"}, {Algorithm::native, "native"},
    {Algorithm::pipelined, "pipelined"}, {Algorithm::decomposed, "decomposed"}};
constexpr Entry<NativeTail, const char*> kNativeTailNames[] = {
    {NativeTail::automatic, "auto"}, {NativeTail::kernel, "kernel"},
    {NativeTail::library, "library"}};

// The key named `text` in `names`; throws Error naming `what` and every
// name otherwise.
template <typename Key, std::size_t N>
Key parse_named(const Entry<Key, const char*> (&names)[N], const std::string& text,
                const std::string& what) {
  if (const auto key = core::key_named(names, text)) return *key;
  std::string choices;
  for (const Entry<Key, const char*>& entry : names) {
    choices += std::string(choices.empty() ? "" : ", ") + entry.value;
  }
  throw Error(ErrorCode::invalid_argument,
              what + ": must be one of " + choices + "; got '" + text + "'");
}

}  // namespace

const char* to_string(ErrorCode code) noexcept {
  return core::lookup(kErrorCodeNames, code, "unknown");
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string("asynctp ") + to_string(code) + ": " + message),
      code_(code),
      detail_(message) {}

const char* to_string(DType dtype) noexcept { return core::lookup(kDTypeNames, dtype, "unknown"); }

std::size_t element_size(DType dtype) noexcept { return dtype == DType::fp32 ? 4 : 2; }

const char* to_string(DeviceKind kind) noexcept {
  return core::lookup(kDeviceKindNames, kind, "unknown");
}

const char* to_string(Algorithm algorithm) noexcept {
  return core::lookup(kAlgorithmNames, algorithm, "unknown");
}

Algorithm parse_algorithm(const std::string& text, const std::string& what) {
  return parse_named(kAlgorithmNames, text, what);
}

const char* to_string(NativeTail tail) noexcept {
  return core::lookup(kNativeTailNames, tail, "unknown");
}

NativeTail parse_native_tail(const std::string& text, const std::string& what) {
  return parse_named(kNativeTailNames, text, what);
}

}  // namespace asynctp
