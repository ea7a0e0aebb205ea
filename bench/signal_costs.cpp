// What each signalling mechanism of the loopback links costs on the GPU, in
// isolation (bench/NOTES.md, "arrival link" studies): stream memory
// operations on device memory and on host-mapped memory, the arrival model's
// placement copy, and the native kernel with every flag already set, its
// flags in device memory vs in host-mapped memory. Times are medians of 15
// event-timed repetitions on one stream.
//
//   asynctp_signal_costs            (needs an sm_90 GPU for the kernel rows)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "async_input_gemm.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu/resources.hpp"
#include "gpu/stream_memops.hpp"

namespace {

using namespace asynctp::cuda;
using namespace asynctp::gpu;

constexpr int kOps = 64;  // memory operations per timed batch
constexpr int kReps = 15;

// Host time of the last enqueue() a median_ms call made (microseconds).
double g_last_host_us = 0;

double median_ms(cudaStream_t s, const std::function<void()>& enqueue) {
  enqueue();  // warm-up
  check_cuda(cudaStreamSynchronize(s), "warm-up");
  std::vector<float> times;
  for (int r = 0; r < kReps; ++r) {
    // resources.hpp's Event has timing disabled: time with plain events.
    cudaEvent_t a, b;
    check_cuda(cudaEventCreate(&a), "cudaEventCreate");
    check_cuda(cudaEventCreate(&b), "cudaEventCreate");
    check_cuda(cudaEventRecord(a, s), "record");
    const auto host_start = std::chrono::steady_clock::now();
    enqueue();
    g_last_host_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start)
            .count();
    check_cuda(cudaEventRecord(b, s), "record");
    check_cuda(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, a, b), "elapsed");
    times.push_back(ms);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void row(const std::string& what, double ms, const std::string& per = "") {
  std::printf("%-58s %10.4f ms %s\n", what.c_str(), ms, per.c_str());
}

// Device time per operation, and the host time of enqueueing one.
std::string per_op(double ms) {
  char text[96];
  std::snprintf(text, sizeof text, "(%.2f us per op; host enqueue %.2f us per op)",
                ms * 1000.0 / kOps, g_last_host_us / kOps);
  return text;
}

}  // namespace

int main() {
  check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
  Stream stream("stream create");
  const cudaStream_t s = stream.get();
  DeviceMemory device_words;
  auto* dwords = static_cast<std::uint32_t*>(device_words.ensure(kOps * 4, "cudaMalloc(words)"));
  check_cuda(cudaMemset(dwords, 0, kOps * 4), "memset");
  MappedWords host_words(kOps, "mapped words");
  std::uint32_t* hwords = host_words.device();

  row("empty (event to event)", median_ms(s, [] {}));
  const double w_dev = median_ms(s, [&] {
    for (int i = 0; i < kOps; ++i) write_value32(s, dwords + i, 7);
  });
  row("64 x cuStreamWriteValue32, device memory", w_dev, per_op(w_dev));
  const double w_host = median_ms(s, [&] {
    for (int i = 0; i < kOps; ++i) write_value32(s, hwords + i, 7);
  });
  row("64 x cuStreamWriteValue32, host-mapped memory", w_host, per_op(w_host));
  const double wait_dev = median_ms(s, [&] {
    for (int i = 0; i < kOps; ++i) wait_value32_equal(s, dwords + i, 7);
  });
  row("64 x cuStreamWaitValue32 (already equal), device memory", wait_dev, per_op(wait_dev));
  const double wait_host = median_ms(s, [&] {
    for (int i = 0; i < kOps; ++i) wait_value32_equal(s, hwords + i, 7);
  });
  row("64 x cuStreamWaitValue32 (already equal), host-mapped", wait_host, per_op(wait_host));
  const double pairs = median_ms(s, [&] {
    for (int i = 0; i < kOps / 2; ++i) {
      wait_value32_equal(s, hwords + i, 7);
      write_value32(s, dwords + i, 7);
    }
  });
  row("32 x (wait host-mapped, write device): v1 arrival pieces", pairs, per_op(pairs));

  // The arrival model's placement: 7 of 8 chunks of 8192 x 8192 bf16.
  const std::size_t chunk = 1024ull * 8192 * 2;
  DeviceMemory src, dst;
  void* from = src.ensure(7 * chunk, "cudaMalloc(src)");
  void* to = dst.ensure(7 * chunk, "cudaMalloc(dst)");
  row("placement: 7 x 16 MiB cudaMemcpyAsync D2D", median_ms(s, [&] {
        for (int c = 0; c < 7; ++c) {
          check_cuda(cudaMemcpyAsync(static_cast<char*>(to) + c * chunk,
                                     static_cast<char*>(from) + c * chunk, chunk,
                                     cudaMemcpyDeviceToDevice, s),
                     "memcpy");
        }
      }));

  // The native kernel, 8192^3, 8 chunks x 4 pieces, every flag already set.
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "props");
  if (prop.major != 9) {
    std::printf("no sm_90 GPU: kernel rows skipped\n");
    return 0;
  }
  const std::int64_t M = 8192, N = 8192, K = 8192;
  DeviceMemory a, b, c, err;
  native::NativeGemmArgs args;
  args.a = a.ensure(M * K * 2, "A");
  args.b = b.ensure(K * N * 2, "B");
  args.c = c.ensure(M * N * 2, "C");
  check_cuda(cudaMemset(const_cast<void*>(args.a), 0x3c, M * K * 2), "memset A");
  check_cuda(cudaMemset(const_cast<void*>(args.b), 0x3c, K * N * 2), "memset B");
  args.m_per_chunk = 256;
  args.n = N;
  args.k = K;
  args.world_size = 32;
  args.pivot = 0;
  args.epoch = 7;
  args.timeout_ns = 5'000'000'000ull;
  args.error_words = static_cast<std::uint32_t*>(err.ensure(12, "err"));
  check_cuda(cudaMemset(args.error_words, 0, 12), "memset err");
  for (int i = 0; i < 32; ++i) host_words.host()[i] = 7;
  check_cuda(cudaMemcpy(dwords, host_words.host(), 32 * 4, cudaMemcpyHostToDevice), "flags");
  // The library chooses for the whole chunks, then launches per piece.
  native::NativeGemmArgs whole = args;
  whole.m_per_chunk = 1024;
  whole.world_size = 8;
  whole.chunk_flags = dwords;
  const native::NativeGemmConfig* config = native::choose_native_gemm_config(whole);
  if (!config) {
    std::printf("no native config for 8192^3\n");
    return 1;
  }
  std::printf("native config: %s\n", config->name);
  for (int where = 0; where < 2; ++where) {
    args.chunk_flags = where == 0 ? dwords : hwords;
    const double ms =
        median_ms(s, [&] { check_cuda(native::launch(*config, args, nullptr, s), "launch"); });
    row(std::string("native 8192^3, 32 flags preset in ") +
            (where == 0 ? "device memory" : "host-mapped memory"),
        ms);
  }

  // Does a stream blocked in cuStreamWaitValue32 hold up a kernel launched on
  // another stream? Stream x (made first) waits on a word that the host
  // releases 3 ms after the enqueue; stream y runs the kernel (flags preset
  // in device memory). Times from an event on y before both.
  args.chunk_flags = dwords;
  for (int variant = 0; variant < 3; ++variant) {
    Stream x("stream create (x)"), y("stream create (y)");
    cudaEvent_t t0, kernel_end, released;
    check_cuda(cudaEventCreate(&t0), "event");
    check_cuda(cudaEventCreate(&kernel_end), "event");
    check_cuda(cudaEventCreate(&released), "event");
    host_words.host()[40] = 0;
    check_cuda(cudaMemset(dwords + 40, 0, 4), "memset");
    check_cuda(cudaDeviceSynchronize(), "sync");
    check_cuda(cudaEventRecord(t0, y.get()), "record");
    check_cuda(cudaStreamWaitEvent(x.get(), t0, 0), "wait");
    if (variant == 1) wait_value32_equal(x.get(), hwords + 40, 1);
    if (variant == 2) wait_value32_equal(x.get(), dwords + 40, 1);
    check_cuda(cudaEventRecord(released, x.get()), "record");
    check_cuda(native::launch(*config, args, nullptr, y.get()), "launch");
    check_cuda(cudaEventRecord(kernel_end, y.get()), "record");
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3);
    while (std::chrono::steady_clock::now() < until) {
    }
    if (variant == 1) {
      std::atomic_ref<std::uint32_t>(host_words.host()[40]).store(1);
    }
    if (variant == 2) {
      static const std::uint32_t one = 1;
      check_cuda(cudaMemcpy(dwords + 40, &one, 4, cudaMemcpyHostToDevice), "release");
    }
    check_cuda(cudaDeviceSynchronize(), "sync");
    float end_ms = 0, release_ms = 0;
    check_cuda(cudaEventElapsedTime(&end_ms, t0, kernel_end), "elapsed");
    check_cuda(cudaEventElapsedTime(&release_ms, t0, released), "elapsed");
    const char* names[] = {"no wait beside it", "x waits on a host-mapped word (3 ms)",
                           "x waits on a device word (3 ms)"};
    char text[96];
    std::snprintf(text, sizeof text, "(x released at %.3f ms)", release_ms);
    row(std::string("kernel end, ") + names[variant], end_ms, text);
    cudaEventDestroy(t0);
    cudaEventDestroy(kernel_end);
    cudaEventDestroy(released);
  }

  // The arrival link's call replayed on three streams, the clock's release
  // words already set (so no modelled wait): where does the time go? Events
  // after each step on the caller's stream (s), at the kernel's start and end
  // (compute) and after the last signal (copy_in); all times from t0.
  {
    constexpr int kPieces = 32;  // 8 chunks x 4 pieces
    Stream copy_in("stream create (copy in)"), compute("stream create (compute)");
    DeviceMemory gathered_memory, local_memory;
    char* gathered = static_cast<char*>(gathered_memory.ensure(8 * chunk, "gathered"));
    void* local = local_memory.ensure(chunk, "local shard");
    for (int i = 0; i < kPieces; ++i) host_words.host()[i] = 7;  // released
    native::NativeGemmArgs call = args;
    call.a = gathered;
    call.chunk_flags = dwords;
    const char* names[] = {"memset flags",         "local copy + its 4 flags",
                           "placement (7 chunks)", "28 release resets",
                           "start word",           "kernel start",
                           "kernel end",           "copy_in: 28 x (wait, flag)"};
    std::vector<double> sums(8, 0.0);
    const int reps = 10;
    for (int rep = 0; rep < reps + 1; ++rep) {
      std::vector<cudaEvent_t> ev(9);
      for (auto& e : ev) check_cuda(cudaEventCreate(&e), "event");
      check_cuda(cudaEventRecord(ev[0], s), "record");
      check_cuda(cudaMemsetAsync(dwords, 0, 4 * kPieces, s), "memset");
      check_cuda(cudaEventRecord(ev[1], s), "record");
      check_cuda(cudaMemcpyAsync(gathered, local, chunk, cudaMemcpyDeviceToDevice, s), "local");
      for (int j = 0; j < 4; ++j) write_value32(s, dwords + j, 7);
      check_cuda(cudaEventRecord(ev[2], s), "record");
      for (int c = 1; c < 8; ++c) {
        check_cuda(cudaMemcpyAsync(gathered + c * chunk, static_cast<char*>(from) + (c - 1) * chunk,
                                   chunk, cudaMemcpyDeviceToDevice, s),
                   "placement");
      }
      check_cuda(cudaEventRecord(ev[3], s), "record");
      for (int p = 4; p < kPieces; ++p) write_value32(s, hwords + 48, 0);  // stand-in resets
      check_cuda(cudaEventRecord(ev[4], s), "record");
      write_value32(s, hwords + 49, 1);  // stand-in start word
      check_cuda(cudaEventRecord(ev[5], s), "record");
      check_cuda(cudaStreamWaitEvent(copy_in.get(), ev[5], 0), "fork");
      check_cuda(cudaStreamWaitEvent(compute.get(), ev[5], 0), "fork");
      for (int p = 4; p < kPieces; ++p) {
        wait_value32_equal(copy_in.get(), hwords + p, 7);
        write_value32(copy_in.get(), dwords + p, 7);
      }
      check_cuda(cudaEventRecord(ev[8], copy_in.get()), "record");
      check_cuda(cudaEventRecord(ev[6], compute.get()), "record");
      check_cuda(native::launch(*config, call, nullptr, compute.get()), "launch");
      check_cuda(cudaEventRecord(ev[7], compute.get()), "record");
      check_cuda(cudaDeviceSynchronize(), "sync");
      if (rep > 0) {  // the first is a warm-up
        for (int i = 1; i < 9; ++i) {
          float ms = 0;
          check_cuda(cudaEventElapsedTime(&ms, ev[0], ev[i]), "elapsed");
          sums[static_cast<std::size_t>(i - 1)] += ms;
        }
      }
      for (auto& e : ev) cudaEventDestroy(e);
    }
    for (int i = 0; i < 8; ++i) {
      row(std::string("arrival call replay: after ") + names[i],
          sums[static_cast<std::size_t>(i)] / reps);
    }
  }

  std::uint32_t words[3];
  check_cuda(cudaMemcpy(words, args.error_words, 12, cudaMemcpyDeviceToHost), "err");
  std::printf("error words: %u %u %u\n", words[0], words[1], words[2]);
  return words[0] == 0 ? 0 : 1;
}
