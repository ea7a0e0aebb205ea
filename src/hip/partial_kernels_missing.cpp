// A HIP build has no reduce-scatter kernels yet (gpu/partial_kernels.hpp):
// the call check refuses the op with kPartialKernelsMissing before any of
// these could be reached; they answer "not supported" all the same.
#include "gpu/partial_kernels.hpp"

namespace asynctp::gpu {

rt::Status enqueue_reduce_partials(const ReduceArgs&, rt::StreamHandle) {
  return hipErrorNotSupported;
}

rt::Status enqueue_wait_flags(const std::uint32_t*, int, std::uint32_t, std::uint64_t,
                              std::uint32_t*, rt::StreamHandle) {
  return hipErrorNotSupported;
}

rt::Status enqueue_link_delay(std::uint64_t, rt::StreamHandle) { return hipErrorNotSupported; }

}  // namespace asynctp::gpu
