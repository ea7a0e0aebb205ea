// Names and small helpers of the public value types.
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"

namespace asynctp {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid argument";
    case ErrorCode::unsupported:
      return "unsupported";
    case ErrorCode::timeout:
      return "timeout";
    case ErrorCode::mismatch:
      return "rank mismatch";
    case ErrorCode::backend:
      return "backend error";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string("asynctp ") + to_string(code) + ": " + message),
      code_(code),
      detail_(message) {}

const char* to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp32:
      return "fp32";
  }
  return "unknown";
}

std::size_t element_size(DType dtype) noexcept { return dtype == DType::fp32 ? 4 : 2; }

const char* to_string(DeviceKind kind) noexcept {
  switch (kind) {
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::cuda:
      return "cuda";
    case DeviceKind::hip:
      return "hip";
  }
  return "unknown";
}

const char* to_string(Algorithm algorithm) noexcept {
  switch (algorithm) {
    case Algorithm::automatic:
      return "auto";
    case Algorithm::native:
      return "native";
    case Algorithm::pipelined:
      return "pipelined";
    case Algorithm::decomposed:
      return "decomposed";
  }
  return "unknown";
}

Algorithm parse_algorithm(const std::string& text, const std::string& what) {
  for (Algorithm a :
       {Algorithm::automatic, Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    if (text == to_string(a)) return a;
  }
  throw Error(ErrorCode::invalid_argument,
              what + ": must be one of auto, native, pipelined, decomposed; got '" + text + "'");
}

}  // namespace asynctp
