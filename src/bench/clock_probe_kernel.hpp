// The kernel behind bench::ClockProbe (asynctp/bench.hpp), CUDA's: nvcc
// compiles it into the library where the CUDA backend is built.
#pragma once

#include <cuda_runtime.h>

namespace asynctp::bench {

// One probe on `stream`: *mhz = the SM's cycles per microsecond of the
// global timer, over 4 us.
cudaError_t enqueue_clock_probe(double* mhz, cudaStream_t stream);

}  // namespace asynctp::bench
