// bench::ClockProbe's kernel: src/bench/clock_probe_kernel.hpp.
#include "clock_probe_kernel.hpp"

namespace asynctp::bench {
namespace {

constexpr unsigned long long kSpanNs = 4000;

__device__ unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// The global timer ticks coarsely on some GPUs (up to 1 us), so both ends
// of the span sit right after a tick: the cycles counted then span whole
// ticks, and the rate is exact to the loop's few dozen cycles.
__global__ void clock_probe_kernel(double* mhz) {
  const unsigned long long first = global_timer_ns();
  unsigned long long begin;
  do {
    begin = global_timer_ns();
  } while (begin == first);
  const long long begin_cycles = clock64();
  unsigned long long end;
  do {
    end = global_timer_ns();
  } while (end - begin < kSpanNs);
  const long long end_cycles = clock64();
  *mhz = 1e3 * static_cast<double>(end_cycles - begin_cycles) / static_cast<double>(end - begin);
}

}  // namespace

cudaError_t enqueue_clock_probe(double* mhz, cudaStream_t stream) {
  clock_probe_kernel<<<1, 1, 0, stream>>>(mhz);
  return cudaGetLastError();
}

}  // namespace asynctp::bench
