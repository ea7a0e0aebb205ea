// How every C entry point turns the C++ API's outcome into a status code and
// the calling thread's last-error message: the body runs inside guarded(),
// which catches everything (no exception may cross the C ABI).
#pragma once

#include <string>
#include <utility>

#include "asynctp/c_api.h"

namespace asynctp::capi {

// Records `message` as this thread's last error and returns `result`.
asynctpResult_t fail(asynctpResult_t result, const std::string& message);

// Clears this thread's last error (a call that succeeds leaves "").
void clear_last_error() noexcept;

// The status and message for the exception being handled (call only inside
// a catch block).
asynctpResult_t fail_from_current_exception() noexcept;

template <class Body>
asynctpResult_t guarded(Body&& body) noexcept {
  try {
    clear_last_error();
    std::forward<Body>(body)();
    return asynctpSuccess;
  } catch (...) {
    return fail_from_current_exception();
  }
}

}  // namespace asynctp::capi
