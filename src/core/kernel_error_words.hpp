// The native kernels' error words, the same for the CUDA and the AMD kernel:
// [0] 1 + the chunk whose wait ran out (0: none did), [1] the flag value the
// kernel saw then, [2] the epoch it waited for. One reading of them, header
// only so that the kernel libraries' hosts need nothing else from core.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace asynctp::core {

// The message for the exception a caller throws after reading the words
// back; "" when words[0] == 0. It reads like the CPU backend's
// (core::chunk_timeout_message), so a caller matches one phrase on every
// backend; `kernel` names whose wait ran out ("native GEMM").
inline std::string chunk_wait_error_message(const std::string& kernel, const std::uint32_t words[3],
                                            std::uint64_t timeout_ns) {
  if (words[0] == 0) return "";
  const unsigned chunk = words[0] - 1u;
  char buf[224];
  std::snprintf(buf, sizeof buf,
                "chunk %u (the A shard of rank %u) never arrived: the %s's wait saw its "
                "flag read %u, expected epoch %u, for %.3f ms",
                chunk, chunk, kernel.c_str(), words[1], words[2],
                static_cast<double>(timeout_ns) * 1e-6);
  return buf;
}

}  // namespace asynctp::core
