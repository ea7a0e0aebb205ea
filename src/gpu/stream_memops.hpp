// Stream memory operations: a 32-bit write or wait that the GPU's front end
// executes in stream order, with no kernel and so no SM (on CUDA; HIP may run
// them as small kernels, which src/hip/deadlock_rules.hpp accounts for). They are how the
// producer releases a chunk's signal after its copy, and how a stream waits
// for a host-set word. Declared once for both runtimes; implemented in
// src/cuda/stream_memops.cpp (driver entry points looked up at run time with
// cudaGetDriverEntryPointByVersion, so nothing links libcuda.so and binaries
// load on machines without a GPU driver) and src/hip/stream_memops.cpp
// (hipStreamWriteValue32 and friends).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// cuStreamWriteValue32 / hipStreamWriteValue32 with default flags: a memory barrier orders the
// write after every earlier operation of the stream (the chunk's copy).
void write_value32(rt::StreamHandle stream, std::uint32_t* device_address, std::uint32_t value);

// cuStreamWaitValue32 / hipStreamWaitValue32 (EQ): later work of the stream starts once the word
// equals `value`. The wait itself is unbounded, so callers only wait on words
// that something bounded is guaranteed to set (the arrival clock sets every
// release word by its deadline, even when a schedule overruns).
void wait_value32_equal(rt::StreamHandle stream, const std::uint32_t* device_address,
                        std::uint32_t value);

// cuMemsetD32Async / hipMemsetD32Async: `count` 32-bit words set to `value`, in stream order. A
// memset runs as one small kernel ahead of the stream's later work, so it is
// for words written before a GEMM is launched (several flags in one
// operation rather than a memory operation each, ~2 us of device time apiece).
void memset_d32(rt::StreamHandle stream, std::uint32_t* device_address, std::uint32_t value,
                std::size_t count);

}  // namespace asynctp::gpu
