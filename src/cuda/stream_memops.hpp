// Stream memory operations: a 32-bit write or wait that the GPU's front end
// executes in stream order, with no kernel and so no SM. They are how the
// producer releases a chunk's signal after its copy, and how a stream waits
// for a host-set word. The driver entry points are looked up at run time
// (cudaGetDriverEntryPointByVersion), so nothing links libcuda.so and
// binaries load on machines without a GPU driver.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace asynctp::cuda {

// cuStreamWriteValue32 with default flags: a memory barrier orders the write
// after every earlier operation of the stream (the chunk's copy).
void write_value32(cudaStream_t stream, std::uint32_t* device_address, std::uint32_t value);

// cuStreamWaitValue32(EQ): later work of the stream starts once the word
// equals `value`. The wait itself is unbounded, so callers only wait on words
// that something bounded is guaranteed to set (the arrival clock sets every
// release word by its deadline, even when a schedule overruns).
void wait_value32_equal(cudaStream_t stream, const std::uint32_t* device_address,
                        std::uint32_t value);

}  // namespace asynctp::cuda
