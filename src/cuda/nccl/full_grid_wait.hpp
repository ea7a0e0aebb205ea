// The probe grid of peer_copy_probe.hpp: every thread slot of every SM held
// by blocks that wait, bounded, for one flag. While it runs no other kernel
// can start on the device, so whatever releases the flag did not need an SM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace asynctp::nccl {

// Device memory the grid reports through; zero it before the launch.
struct FullGridWords {
  std::uint32_t arrived;        // blocks that started
  std::uint32_t ready;          // = epoch once the last block started (the copy may go)
  std::uint32_t not_resident;   // blocks that gave up waiting for the others to start
  std::uint32_t flag_timeouts;  // blocks that gave up waiting for the flag
  std::uint64_t ready_ns;       // %globaltimer when `ready` was written
  std::uint64_t first_flag_ns;  // %globaltimer when the first block saw the flag (max: never)
};

inline constexpr int kFullGridBlockThreads = 256;

// Blocks of the grid per SM so that every thread slot is taken (the device's
// threads per SM / kFullGridBlockThreads); 0 (and *why) when this kernel
// cannot be that resident on `device`.
int full_grid_blocks_per_sm(int device, const char** why);

// Launches blocks_per_sm * SMs blocks on `stream`. Each block's first thread
// counts itself in, waits (at most timeout_ns) for every block to start, the
// last one to start writes words->ready = epoch (system scope), then each
// waits (at most timeout_ns) for *flag == epoch.
cudaError_t launch_full_grid_wait(FullGridWords* words, const std::uint32_t* flag,
                                  std::uint32_t epoch, std::uint64_t timeout_ns, int blocks,
                                  cudaStream_t stream);

}  // namespace asynctp::nccl
