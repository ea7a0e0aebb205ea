// The chunk gate: the kernel must not read a chunk of A before its flag says
// the chunk is there. A's device buffer starts as NaN; the flags live in
// host-mapped pinned memory, all stale; after the launch a host thread copies
// each chunk's rows from pinned host memory with cudaMemcpyAsync on its own
// stream (the copy engine: a same-GPU device-to-device copy would need SMs,
// which the persistent grid holds), waits for the copy, then releases the
// chunk's flag. The result must match float64 (a chunk read early would be
// NaN) with no error recorded.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "async_input_gemm.hpp"
#include "gpu/gpu_support.hpp"
#include "support/seed.hpp"

namespace {

namespace nat = asynctp::cuda::native;
using asynctp_test::Seed;
using namespace asynctp_test::gpu;

// Long enough that no gate times out while the host dawdles; the test's own
// bound (wait_stream_bounded) is what keeps a broken gate from hanging.
constexpr std::uint64_t kTimeoutNs = 10'000'000'000ull;

struct GatedTiming {
  double last_release_ms = 0;  // host: launch -> last flag release
  double done_ms = 0;          // host: launch -> the poll saw the kernel done
  float kernel_ms = 0;         // GPU events around the launch
};

// One gated run: chunks released in `order`, the first after first_delay_ms,
// then one every step_ms.
void run_gated(const nat::NativeGemmConfig& config, const HostProblem& hp, int pivot,
               std::uint32_t epoch, const std::vector<int>& order, double first_delay_ms,
               double step_ms, const std::string& what, GatedTiming* timing) {
  SCOPED_TRACE(what);
  const int w = hp.world_size;
  DeviceProblem dp;
  ASSERT_NO_FATAL_FAILURE(upload(hp, dp, /*a_poisoned=*/true));

  PinnedBuffer a_host;
  CUDA_ASSERT(a_host.alloc(hp.a_bytes(), cudaHostAllocDefault));
  std::memcpy(a_host.p, hp.a.data(), hp.a_bytes());

  PinnedBuffer flags_host;
  CUDA_ASSERT(flags_host.alloc(sizeof(std::uint32_t) * static_cast<std::size_t>(w),
                               cudaHostAllocMapped));
  std::uint32_t* flags = flags_host.as<std::uint32_t>();
  // Stale values: the previous epoch, or the next one (a gate that tested
  // "flag >= epoch" instead of "== epoch" would pass those chunks early).
  for (int c = 0; c < w; ++c) {
    std::atomic_ref<std::uint32_t>(flags[c]).store(c % 2 ? epoch + 1 : epoch - 1,
                                                   std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::uint32_t* flags_dev = nullptr;
  CUDA_ASSERT(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_dev), flags_host.p, 0));

  Stream kernel_stream, copy_stream;
  CUDA_ASSERT(kernel_stream.create());
  CUDA_ASSERT(copy_stream.create());
  Event e0, e1;
  CUDA_ASSERT(e0.create());
  CUDA_ASSERT(e1.create());

  const nat::NativeGemmArgs args = make_args(hp, dp, pivot, flags_dev, epoch, kTimeoutNs);
  std::string reason;
  ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
  CUDA_ASSERT(cudaDeviceSynchronize());  // uploads done before the non-blocking streams run

  const auto t_launch = Clock::now();
  CUDA_ASSERT(cudaEventRecord(e0.e, kernel_stream.s));
  CUDA_ASSERT(nat::launch(config, args, nullptr, kernel_stream.s));
  CUDA_ASSERT(cudaEventRecord(e1.e, kernel_stream.s));

  cudaError_t producer_status = cudaSuccess;
  Clock::time_point last_release = t_launch;
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(first_delay_ms));
    bool first = true;
    for (int chunk : order) {
      if (!first) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
      first = false;
      const std::size_t offset = static_cast<std::size_t>(chunk) * hp.chunk_bytes();
      cudaError_t e = cudaMemcpyAsync(static_cast<char*>(dp.a.p) + offset,
                                      static_cast<const char*>(a_host.p) + offset,
                                      hp.chunk_bytes(), cudaMemcpyHostToDevice, copy_stream.s);
      if (e == cudaSuccess) e = cudaStreamSynchronize(copy_stream.s);
      if (e != cudaSuccess) {
        producer_status = e;  // the chunk stays unreleased: the kernel times out
        return;
      }
      std::atomic_ref<std::uint32_t>(flags[chunk]).store(epoch, std::memory_order_release);
      last_release = Clock::now();
    }
  });
  Clock::time_point done_at;
  const cudaError_t kernel_status = wait_stream_bounded(kernel_stream.s, 60.0, what, &done_at);
  producer.join();
  CUDA_ASSERT(producer_status);
  CUDA_ASSERT(kernel_status);
  CUDA_ASSERT(cudaGetLastError());

  GatedTiming t;
  t.last_release_ms = ms_between(t_launch, last_release);
  t.done_ms = ms_between(t_launch, done_at);
  CUDA_ASSERT(cudaEventElapsedTime(&t.kernel_ms, e0.e, e1.e));
  std::printf("  %-60s last release %.2f ms, kernel done (host) %.2f ms, kernel (events) %.2f ms\n",
              what.c_str(), t.last_release_ms, t.done_ms, double(t.kernel_ms));
  // The kernel cannot be seen finished before the last chunk was released.
  EXPECT_GE(t.done_ms, t.last_release_ms) << "the kernel finished before the last release";
  ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, what));
  if (timing) *timing = t;
}

std::string label(const nat::NativeGemmConfig& config, const HostProblem& hp, int pivot,
                  const std::vector<int>& order) {
  std::string s = std::string(config.name) + (hp.b_col_major ? " B col" : " B row") + " W " +
                  std::to_string(hp.world_size) + " n " + std::to_string(hp.n) + " k " +
                  std::to_string(hp.k) + " pivot " + std::to_string(pivot) + " order ";
  for (int c : order) s += std::to_string(c);
  return s;
}

// Every config and B layout: chunks released in a random order, 1 ms apart.
TEST(NativeGemmGating, ShuffledReleases) {
  ASYNCTP_REQUIRE_SM90();
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    for (bool bcol : {false, true}) {
      if (bcol ? !config.has_b_col_major : !config.has_b_row_major) continue;
      const Seed seed(std::string(config.name) + (bcol ? "/bcol" : "/brow"));
      SCOPED_TRACE(seed.note());
      auto rng = seed.rng();
      const int w = 8;
      const HostProblem hp(w, config.m_granularity, random_multiple_of_8(rng, 264, 640),
                           random_multiple_of_8(rng, 136, 520), bcol, rng);
      const int pivot = static_cast<int>(rng() % w);
      std::vector<int> order(w);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      ASSERT_NO_FATAL_FAILURE(run_gated(config, hp, pivot, random_epoch(rng), order, 2.0, 1.0,
                                        label(config, hp, pivot, order), nullptr));
    }
  }
}

// Reverse order with the pivot (the kernel's first chunk) released last,
// 5 ms apart: the kernel must still be running when the last flag goes up.
TEST(NativeGemmGating, ReverseOrderWaitsForLastRelease) {
  ASYNCTP_REQUIRE_SM90();
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    const bool bcol = !config.has_b_row_major;
    const Seed seed(config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    const int w = 8;
    const HostProblem hp(w, config.m_granularity, random_multiple_of_8(rng, 264, 640),
                         random_multiple_of_8(rng, 136, 520), bcol, rng);
    const int pivot = 0;
    std::vector<int> order;
    for (int c = w - 1; c >= 0; --c) order.push_back(c);
    const double first_delay_ms = 5.0, step_ms = 5.0;
    const double total_delay_ms = first_delay_ms + step_ms * (w - 1);
    GatedTiming t;
    ASSERT_NO_FATAL_FAILURE(run_gated(config, hp, pivot, random_epoch(rng), order, first_delay_ms,
                                      step_ms, label(config, hp, pivot, order), &t));
    EXPECT_GE(t.done_ms, total_delay_ms);
    EXPECT_GE(t.last_release_ms, total_delay_ms);
    // GPU timeline: the events bracket the launch, recorded before the
    // producer started sleeping.
    EXPECT_GE(double(t.kernel_ms), total_delay_ms);
  }
}

}  // namespace
