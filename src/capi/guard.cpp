#include "capi/guard.hpp"

#include <exception>
#include <new>

#include "asynctp/error.hpp"

namespace asynctp::capi {
namespace {

// Per thread, as NCCL's and CUDA's last errors: ranks of one process may
// call from several threads.
thread_local std::string last_error;

asynctpResult_t result_of(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return asynctpInvalidArgument;
    case ErrorCode::unsupported: return asynctpUnsupported;
    case ErrorCode::timeout: return asynctpTimeout;
    case ErrorCode::mismatch: return asynctpMismatch;
    case ErrorCode::backend: return asynctpBackendError;
  }
  return asynctpInternalError;
}

}  // namespace

asynctpResult_t fail(asynctpResult_t result, const std::string& message) {
  try {
    last_error = message;
  } catch (...) {
    // Out of memory for the message itself: the code still says what failed.
  }
  return result;
}

void clear_last_error() noexcept { last_error.clear(); }

asynctpResult_t fail_from_current_exception() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return fail(result_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(asynctpInternalError, "asynctp: out of host memory");
  } catch (const std::exception& e) {
    return fail(asynctpInternalError, std::string("asynctp internal error: ") + e.what());
  } catch (...) {
    return fail(asynctpInternalError, "asynctp internal error: an unknown exception");
  }
}

}  // namespace asynctp::capi

extern "C" const char* asynctpGetLastError(void) {
  return asynctp::capi::last_error.c_str();
}

extern "C" const char* asynctpGetErrorString(asynctpResult_t result) {
  switch (result) {
    case asynctpSuccess: return "success";
    case asynctpInvalidArgument: return "invalid_argument";
    case asynctpUnsupported: return "unsupported";
    case asynctpTimeout: return "timeout";
    case asynctpMismatch: return "mismatch";
    case asynctpBackendError: return "backend";
    case asynctpInternalError: return "internal";
  }
  return "unknown result code";
}

extern "C" int asynctpGetVersion(void) { return ASYNCTP_C_API_VERSION; }
