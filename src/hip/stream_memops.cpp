// The HIP implementation of gpu/stream_memops.hpp. HIP runs these on the
// stream's queue (on some ROCm versions as small kernels: the persistent
// grid's size leaves room for them, src/hip/deadlock_rules.hpp).
#include "gpu/stream_memops.hpp"

#include <string>

#include "gpu/check.hpp"

namespace asynctp::gpu {

void memset_d32(rt::StreamHandle stream, std::uint32_t* device_address, std::uint32_t value,
                std::size_t count) {
  check(hipMemsetD32Async(reinterpret_cast<hipDeviceptr_t>(device_address), static_cast<int>(value),
                          count, stream),
        "hipMemsetD32Async");
}

void write_value32(rt::StreamHandle stream, std::uint32_t* device_address, std::uint32_t value) {
  check(hipStreamWriteValue32(stream, device_address, value, 0), "hipStreamWriteValue32");
}

void wait_value32_equal(rt::StreamHandle stream, const std::uint32_t* device_address,
                        std::uint32_t value) {
  // HIP's wait takes a non-const pointer; it only reads the word.
  check(hipStreamWaitValue32(stream, const_cast<std::uint32_t*>(device_address), value,
                             hipStreamWaitValueEq, 0xffffffffu),
        "hipStreamWaitValue32");
}

}  // namespace asynctp::gpu
