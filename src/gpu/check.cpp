#include "gpu/check.hpp"

#include <string>

#include "asynctp/error.hpp"

namespace asynctp::gpu {

void check(rt::Status status, const char* what) {
  if (status == rt::kSuccess) return;
  rt::clear_last_error();
  throw Error(ErrorCode::backend, std::string(rt::kName) + " " + what + ": " +
                                      rt::error_name(status) + " (" + rt::error_string(status) +
                                      ")");
}

}  // namespace asynctp::gpu
