// The bounded wait: one chunk is never signalled and timeout_ns = 50 ms. The
// kernel must end on its own (the test bounds its wait at 5 s and aborts past
// it, so it can never hang), the error words must name the chunk, the flag
// value it saw and the epoch, and native_gemm_error_message must say so. The
// device must stay usable: the same problem then runs correctly.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "async_input_gemm.hpp"
#include "gpu/gpu_support.hpp"
#include "support/seed.hpp"

namespace {

namespace nat = asynctp::cuda::native;
using asynctp_test::Seed;
using namespace asynctp_test::gpu;

constexpr std::uint64_t kTimeoutNs = 50'000'000ull;  // 50 ms
constexpr double kHostLimitS = 5.0;

void run_missing_chunk(const nat::NativeGemmConfig& config, bool bcol, int missing_offset,
                       bool mapped_flags) {
  const Seed seed(std::string(config.name) + "/missing+" + std::to_string(missing_offset));
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const int w = 4;
  const HostProblem hp(w, config.m_granularity, random_multiple_of_8(rng, 264, 640),
                       random_multiple_of_8(rng, 136, 520), bcol, rng);
  const int pivot = static_cast<int>(rng() % w);
  const int missing = (pivot + missing_offset) % w;  // offset 0: the pivot, the first chunk waited on
  const std::uint32_t epoch = random_epoch(rng);
  const std::uint32_t stale = epoch ^ 0x00A5A500u;  // != epoch, and recognisable
  const std::string what = std::string(config.name) + (bcol ? " B col" : " B row") + " pivot " +
                           std::to_string(pivot) + " missing chunk " + std::to_string(missing) +
                           (mapped_flags ? " (mapped host flags)" : " (device flags)");
  SCOPED_TRACE(what);

  DeviceProblem dp;
  ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
  std::vector<std::uint32_t> values(static_cast<std::size_t>(w), epoch);
  values[static_cast<std::size_t>(missing)] = stale;
  const std::size_t flag_bytes = values.size() * sizeof(std::uint32_t);
  DeviceBuffer flags_device;
  PinnedBuffer flags_host;
  std::uint32_t* flags = nullptr;
  if (mapped_flags) {
    CUDA_ASSERT(flags_host.alloc(flag_bytes, cudaHostAllocMapped));
    std::memcpy(flags_host.p, values.data(), flag_bytes);
    CUDA_ASSERT(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags), flags_host.p, 0));
  } else {
    CUDA_ASSERT(flags_device.alloc(flag_bytes));
    CUDA_ASSERT(cudaMemcpy(flags_device.p, values.data(), flag_bytes, cudaMemcpyHostToDevice));
    flags = flags_device.as<std::uint32_t>();
  }
  Stream stream;
  CUDA_ASSERT(stream.create());
  Event e0, e1;
  CUDA_ASSERT(e0.create());
  CUDA_ASSERT(e1.create());

  const nat::NativeGemmArgs args = make_args(hp, dp, pivot, flags, epoch, kTimeoutNs);
  std::string reason;
  ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
  const auto t_launch = Clock::now();
  CUDA_ASSERT(cudaEventRecord(e0.e, stream.s));
  CUDA_ASSERT(nat::launch(config, args, nullptr, stream.s));
  CUDA_ASSERT(cudaEventRecord(e1.e, stream.s));
  Clock::time_point done_at;
  CUDA_ASSERT(wait_stream_bounded(stream.s, kHostLimitS, what, &done_at));
  CUDA_ASSERT(cudaStreamSynchronize(stream.s));
  CUDA_ASSERT(cudaGetLastError());
  float kernel_ms = 0;
  CUDA_ASSERT(cudaEventElapsedTime(&kernel_ms, e0.e, e1.e));

  std::uint32_t err[3] = {0, 0, 0};
  CUDA_ASSERT(cudaMemcpy(err, dp.err.p, sizeof err, cudaMemcpyDeviceToHost));
  const std::string message = nat::native_gemm_error_message(err, kTimeoutNs);
  std::printf("  %-60s kernel %.2f ms (host %.2f ms), words %u/%u/%u: %s\n", what.c_str(),
              double(kernel_ms), ms_between(t_launch, done_at), err[0], err[1], err[2],
              message.c_str());
  EXPECT_EQ(static_cast<std::uint32_t>(missing + 1), err[0]) << "error word 0 = 1 + chunk";
  EXPECT_EQ(stale, err[1]) << "error word 1 = the flag value seen";
  EXPECT_EQ(epoch, err[2]) << "error word 2 = the epoch expected";
  EXPECT_NE(std::string::npos, message.find("chunk " + std::to_string(missing))) << message;
  EXPECT_NE(std::string::npos, message.find(std::to_string(stale))) << message;
  EXPECT_NE(std::string::npos, message.find(std::to_string(epoch))) << message;
  // It waited about the timeout, not forever and not one timeout per CTA.
  EXPECT_GE(double(kernel_ms), kTimeoutNs * 1e-6 * 0.95);
  EXPECT_LT(ms_between(t_launch, done_at), kHostLimitS * 1e3);

  // The device is still usable: release the chunk and run again.
  values[static_cast<std::size_t>(missing)] = epoch;
  if (mapped_flags) {
    std::memcpy(flags_host.p, values.data(), flag_bytes);
  } else {
    CUDA_ASSERT(cudaMemcpy(flags_device.p, values.data(), flag_bytes, cudaMemcpyHostToDevice));
  }
  ASSERT_NO_FATAL_FAILURE(reset_output(hp, dp));
  CUDA_ASSERT(nat::launch(config, args, nullptr, stream.s));
  CUDA_ASSERT(wait_stream_bounded(stream.s, 30.0, what + " (rerun)"));
  CUDA_ASSERT(cudaGetLastError());
  ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, what + " rerun after timeout"));
}

// Each config: the pivot chunk missing (device flags) and a later chunk
// missing (host-mapped flags), B layouts alternating.
TEST(NativeGemmTimeout, MissingChunkIsReported) {
  ASYNCTP_REQUIRE_SM90();
  int index = 0;
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    bool bcol = (index++ % 2) == 1;
    if (bcol ? !config.has_b_col_major : !config.has_b_row_major) bcol = !bcol;
    ASSERT_NO_FATAL_FAILURE(run_missing_chunk(config, bcol, 0, false));
    ASSERT_NO_FATAL_FAILURE(run_missing_chunk(config, bcol, 2, true));
  }
}

}  // namespace
