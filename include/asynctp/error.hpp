// The one exception type asynctp throws. Every message names the argument (or
// resource) involved and the rule it broke, so a user can fix the call without
// reading our source.
#pragma once

#include <stdexcept>
#include <string>

namespace asynctp {

enum class ErrorCode {
  invalid_argument,  // a caller's argument broke a documented rule
  unsupported,       // valid input, but the requested path cannot run it
  timeout,           // a bounded wait expired (chunk signal, barrier)
  mismatch,          // ranks disagreed on a collective call's arguments
  backend,           // the backend runtime failed (BLAS, CUDA, NCCL, threads)
};

const char* to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }
  // The message without the "asynctp <code>: " prefix that what() carries.
  const std::string& detail() const noexcept { return detail_; }

 private:
  ErrorCode code_;
  std::string detail_;
};

}  // namespace asynctp
