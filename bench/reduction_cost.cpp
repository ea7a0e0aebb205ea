// What the reduce-scatter's reduction costs alone (bench/NOTES.md, "native
// matmul + reduce-scatter"): gpu::enqueue_reduce_partials, the one kernel
// every GPU algorithm of the op ends with, on random bf16 partials, W = 8, at
// the row-parallel target shapes' chunk sizes; beside it a device-to-device
// copy of the same bytes (read + written) as the HBM ceiling. Its bytes: W
// partial chunks read, one written, (W + 1) m n 2 B. Then the loopback's
// reduction as the slots land (gpu::enqueue_reduce_as_slots_land) with every
// slot landed at its launch: one run, the same bytes, on a grid the device
// holds at once. Medians of 21 event-timed repetitions.
//
//   asynctp_reduction_cost
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "asynctp/bench.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu/partial_kernels.hpp"
#include "gpu/resources.hpp"

namespace {

using namespace asynctp;
using asynctp::cuda::check_cuda;

constexpr int kWorld = 8;
constexpr int kReps = 21;

// Event-timed repetitions on one stream, after one warm-up.
template <class Enqueue>
double median_ms(cudaStream_t s, Enqueue enqueue) {
  enqueue();
  std::vector<double> times;
  for (int r = 0; r < kReps; ++r) {
    bench::Event begin, end;
    begin.record(s);
    enqueue();
    end.record(s);
    end.synchronize();
    times.push_back(end.ms_since(begin));
  }
  return bench::median(times);
}

}  // namespace

int main() {
  check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
  gpu::Stream stream("stream create");
  const cudaStream_t s = stream.get();
  struct Shape {
    std::int64_t m_global, n;
  };
  const Shape shapes[] = {{4096, 8192}, {8192, 8192}, {16384, 8192},
                          {4096, 5120}, {8192, 5120}, {16384, 5120}};
  std::printf("%-22s %10s %12s %10s %12s %10s %9s %11s\n", "M/W x n (W = 8)", "bytes MB",
              "reduce (us)", "GB/s", "copy (us)", "GB/s", "fraction", "landed (us)");
  std::mt19937 rng(20261204);
  for (const Shape& shape : shapes) {
    const std::int64_t m = shape.m_global / kWorld;
    const std::size_t chunk = static_cast<std::size_t>(m * shape.n) * 2;  // bf16
    gpu::DeviceMemory own, slots, out, sum;
    own.ensure(chunk, "own");
    sum.ensure(chunk * 2, "fp32 sum");
    slots.ensure(chunk * (kWorld - 1), "slots");
    out.ensure(chunk * 2, "out");  // the copy's source and destination too
    // Random bf16 (exponent near 1): never time zeros.
    std::vector<std::uint16_t> host(chunk / 2);
    for (auto& v : host) v = static_cast<std::uint16_t>(0x3F00u | (rng() & 0xFFu));
    check_cuda(cudaMemcpy(own.get(), host.data(), chunk, cudaMemcpyHostToDevice), "upload");
    for (int i = 0; i + 1 < kWorld; ++i) {
      check_cuda(cudaMemcpy(static_cast<char*>(slots.get()) + chunk * static_cast<std::size_t>(i),
                            host.data(), chunk, cudaMemcpyHostToDevice),
                 "upload");
    }
    gpu::ReduceArgs args;
    args.dtype = DType::bf16;
    args.rows = m;
    args.cols = shape.n;
    args.own = own.get();
    args.slots = slots.get();
    args.slot_count = kWorld - 1;
    args.out = out.get();
    const double reduce_ms = median_ms(
        s, [&] { check_cuda(gpu::enqueue_reduce_partials(args, s), "reduction launch"); });
    const std::size_t bytes = chunk * (kWorld + 1);
    // The ceiling: a device copy moving the same bytes (half read, half written).
    const std::size_t copy_bytes = bytes / 2;
    gpu::DeviceMemory src, dst;
    src.ensure(copy_bytes, "copy source");
    dst.ensure(copy_bytes, "copy destination");
    check_cuda(cudaMemset(src.get(), 0x3F, copy_bytes), "fill");
    const double copy_ms = median_ms(s, [&] {
      check_cuda(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice, s),
                 "copy");
    });
    // Every slot landed: the flags hold the epoch before the first launch.
    gpu::DeviceMemory flags, error_words;
    flags.ensure(sizeof(std::uint32_t) * kWorld, "slot flags");
    error_words.ensure(sizeof(std::uint32_t) * 3, "error words");
    check_cuda(cudaMemset(flags.get(), 0x01, sizeof(std::uint32_t) * kWorld), "flags");
    check_cuda(cudaMemset(error_words.get(), 0, sizeof(std::uint32_t) * 3), "error words");
    gpu::ReduceArgs landed = args;
    landed.error_words = static_cast<std::uint32_t*>(error_words.get());
    gpu::SlotFlags land;
    land.flags = static_cast<const std::uint32_t*>(flags.get());
    land.epoch = 0x01010101u;
    land.timeout_ns = 1'000'000'000u;
    const double landed_ms = median_ms(s, [&] {
      check_cuda(gpu::enqueue_reduce_as_slots_land(landed, land, static_cast<float*>(sum.get()), s),
                 "reduction as the slots land launch");
    });
    const double reduce_gbps = static_cast<double>(bytes) / (reduce_ms * 1e6);
    const double copy_gbps = static_cast<double>(2 * copy_bytes) / (copy_ms * 1e6);
    char label[32];
    std::snprintf(label, sizeof label, "%lld x %lld", static_cast<long long>(m),
                  static_cast<long long>(shape.n));
    std::printf("%-22s %10.1f %12.1f %10.0f %12.1f %10.0f %9.2f %11.1f\n", label,
                static_cast<double>(bytes) / 1e6, reduce_ms * 1e3, reduce_gbps, copy_ms * 1e3,
                copy_gbps, reduce_gbps / copy_gbps, landed_ms * 1e3);
  }
  return 0;
}
