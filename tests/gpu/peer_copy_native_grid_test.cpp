// The full-grid negative control across GPUs (producer_full_grid_test's
// ProducerNegativeControl, with a peer GPU as the source). The native kernel
// runs on GPU 0 with max_sms = every SM, its 8 chunks of A gated by flags;
// the producer, on a second stream, pulls each chunk from GPU 1's memory
// (peer access on) and then releases the chunk's flag with
// cuStreamWriteValue32 (no SM), as the NCCL transport pulls:
//   PeerCopyNativeGrid.MemcpyDefaultBesideFullGrid   cudaMemcpyAsync(cudaMemcpyDefault),
//                                                    the transport's pull today
//   PeerCopyNativeGrid.BatchPreferOverlapBesideFullGrid
//                                                    cudaMemcpyBatchAsync with
//                                                    cudaMemcpyFlagPreferOverlapWithCompute,
//                                                    as NCCL's copy-engine collectives copy
// Each must complete with C correct for every config. The other outcome is
// the kernel's bounded wait (2 s) timing out on a chunk: the pull could not
// run beside the grid, i.e. it needs SMs, and native must not be planned
// with that pull (cuda/nccl/peer_copy_probe.hpp: apply_peer_copy_probe;
// pipelined is the fallback). Either way it ends: the kernel's waits are
// bounded and the host's waits abort the process past 30 s. After each call
// the same call with pinned-host chunks (copy engines) must complete, which
// shows the device is still usable. Skips below 2 GPUs, without peer access
// between GPUs 0 and 1, or when GPU 0 is not sm_90.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "async_input_gemm.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/stream_memops.hpp"
#include "support/seed.hpp"

namespace {

namespace nat = asynctp::cuda::native;
using asynctp_test::Seed;
using namespace asynctp_test::gpu;

constexpr int kChunks = 8;
constexpr std::int64_t kK = 1024;
constexpr std::uint64_t kTimeoutNs = 2'000'000'000ull;
constexpr double kHostLimitS = 30.0;

enum class Pull { memcpy_default, batch_prefer_overlap, pinned_host };

const char* name(Pull p) {
  switch (p) {
    case Pull::memcpy_default:
      return "cudaMemcpyAsync(cudaMemcpyDefault) from GPU 1";
    case Pull::batch_prefer_overlap:
      return "cudaMemcpyBatchAsync(PreferOverlapWithCompute) from GPU 1";
    case Pull::pinned_host:
      return "cudaMemcpyAsync from pinned host memory";
  }
  return "?";
}

// "" when GPUs 0 and 1 are there, GPU 0 is sm_90 and can map GPU 1's memory
// (peer access enabled on return).
std::string two_gpu_skip_reason() {
  if (const std::string& why = sm90_skip_reason(); !why.empty()) return why;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    (void)cudaGetLastError();
    return "needs 2 GPUs; this process sees " + std::to_string(count);
  }
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, 0, 1) != cudaSuccess || !can) {
    (void)cudaGetLastError();
    return "GPU 0 cannot access GPU 1's memory (no P2P: the transport would not plan native)";
  }
  if (cudaSetDevice(0) != cudaSuccess) return "cannot select GPU 0";
  const cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
    return std::string("cudaDeviceEnablePeerAccess(1): ") + cudaGetErrorName(e);
  }
  (void)cudaGetLastError();
  return "";
}

// One config's case: shape with a grid of every SM, problem on GPU 0, A's
// source on GPU 1 and in pinned host memory, flags, two streams on GPU 0.
struct PeerGridCase {
  const nat::NativeGemmConfig* config = nullptr;
  std::int64_t m_per_chunk = 0, n = 0;
  int sms = 0, grid = 0;
  std::unique_ptr<HostProblem> hp;
  DeviceProblem dp;
  DeviceBuffer a_peer;  // on GPU 1
  PinnedBuffer a_host;
  DeviceBuffer flags;
  Stream gemm, prod;
};

// m_per_chunk = 2 granules, n doubled from 1024 until the grid fills every
// SM or more tiles would not fill more (the occupancy limit).
void pick_shape(PeerGridCase& pc, const nat::NativeGemmConfig& config) {
  pc.sms = sm_count();
  ASSERT_GT(pc.sms, 0);
  DeviceBuffer dummy;
  CUDA_ASSERT(dummy.alloc(256));
  nat::NativeGemmArgs probe;
  probe.a = probe.b = probe.c = dummy.p;
  probe.chunk_flags = dummy.as<std::uint32_t>();
  probe.error_words = dummy.as<std::uint32_t>() + 16;
  probe.timeout_ns = 1;
  probe.world_size = kChunks;
  probe.k = kK;
  probe.max_sms = pc.sms;
  probe.m_per_chunk = 2 * config.m_granularity;
  probe.b_col_major = !config.has_b_row_major;
  for (std::int64_t n = 1024; n <= 8192; n *= 2) {
    probe.n = n;
    std::string reason;
    ASSERT_TRUE(nat::can_implement(config, probe, &reason)) << config.name << ": " << reason;
    pc.config = &config;
    pc.m_per_chunk = probe.m_per_chunk;
    pc.n = n;
    pc.grid = nat::grid_size(config, probe);
    const std::int64_t tiles =
        kChunks * probe.m_per_chunk / config.tile_m * ((n + config.tile_n - 1) / config.tile_n);
    if (pc.grid >= pc.sms || tiles >= pc.sms) break;
  }
}

void setup(PeerGridCase& pc, const nat::NativeGemmConfig& config, std::mt19937_64& rng,
           std::uint32_t stale_flag) {
  CUDA_ASSERT(cudaSetDevice(0));
  ASSERT_NO_FATAL_FAILURE(pick_shape(pc, config));
  pc.hp = std::make_unique<HostProblem>(kChunks, pc.m_per_chunk, pc.n, kK, !config.has_b_row_major,
                                        rng);
  ASSERT_NO_FATAL_FAILURE(upload(*pc.hp, pc.dp, /*a_poisoned=*/true));
  CUDA_ASSERT(pc.a_host.alloc(pc.hp->a_bytes(), cudaHostAllocDefault));
  std::memcpy(pc.a_host.p, pc.hp->a.data(), pc.hp->a_bytes());
  CUDA_ASSERT(cudaSetDevice(1));
  CUDA_ASSERT(pc.a_peer.alloc(pc.hp->a_bytes()));
  CUDA_ASSERT(cudaMemcpy(pc.a_peer.p, pc.hp->a.data(), pc.hp->a_bytes(), cudaMemcpyHostToDevice));
  CUDA_ASSERT(cudaSetDevice(0));
  CUDA_ASSERT(pc.flags.alloc(kChunks * sizeof(std::uint32_t)));
  const std::vector<std::uint32_t> stale(kChunks, stale_flag);
  CUDA_ASSERT(cudaMemcpy(pc.flags.p, stale.data(), kChunks * sizeof(std::uint32_t),
                         cudaMemcpyHostToDevice));
  CUDA_ASSERT(pc.gemm.create());
  CUDA_ASSERT(pc.prod.create());
  CUDA_ASSERT(cudaDeviceSynchronize());
}

cudaError_t copy_chunk(Pull pull, void* dst, const void* src, std::size_t bytes,
                       cudaStream_t stream) {
  if (pull != Pull::batch_prefer_overlap) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  }
  void* dsts[] = {dst};
  const void* srcs[] = {src};
  std::size_t sizes[] = {bytes};
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  std::size_t first_copy[] = {0};
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attributes, first_copy, 1, stream);
}

struct CallResult {
  std::uint32_t err[3] = {1, 1, 1};
  double host_ms = 0;
};

// One call: poisoned A and C, the kernel on the gemm stream, then the
// producer (pivot order) on the other; both waited on with a bound.
void run_call(PeerGridCase& pc, Pull pull, int pivot, std::uint32_t epoch, CallResult* out) {
  CUDA_ASSERT(cudaSetDevice(0));
  CUDA_ASSERT(cudaMemsetAsync(pc.dp.a.p, 0xFF, pc.hp->a_bytes(), pc.gemm.s));
  CUDA_ASSERT(cudaMemsetAsync(pc.dp.c.p, 0xFF, pc.hp->c_bytes(), pc.gemm.s));
  CUDA_ASSERT(cudaMemsetAsync(pc.dp.err.p, 0, 3 * sizeof(std::uint32_t), pc.gemm.s));
  CUDA_ASSERT(wait_stream_bounded(pc.gemm.s, kHostLimitS, "reset"));
  const nat::NativeGemmArgs args =
      make_args(*pc.hp, pc.dp, pivot, pc.flags.as<std::uint32_t>(), epoch, kTimeoutNs, pc.sms);
  std::string reason;
  ASSERT_TRUE(nat::can_implement(*pc.config, args, &reason)) << reason;
  const auto t0 = Clock::now();
  CUDA_ASSERT(nat::launch(*pc.config, args, nullptr, pc.gemm.s));
  const char* source =
      static_cast<const char*>(pull == Pull::pinned_host ? pc.a_host.p : pc.a_peer.p);
  const std::size_t chunk = pc.hp->chunk_bytes();
  for (int i = 0; i < kChunks; ++i) {
    const int c = (pivot + i) % kChunks;
    const std::size_t offset = chunk * static_cast<std::size_t>(c);
    CUDA_ASSERT(copy_chunk(pull, static_cast<char*>(pc.dp.a.p) + offset, source + offset, chunk,
                           pc.prod.s));
    asynctp::gpu::write_value32(pc.prod.s, pc.flags.as<std::uint32_t>() + c, epoch);
  }
  Clock::time_point gemm_done, prod_done;
  CUDA_ASSERT(wait_stream_bounded(pc.gemm.s, kHostLimitS, std::string(name(pull)) + " (kernel)",
                                  &gemm_done));
  CUDA_ASSERT(
      wait_stream_bounded(pc.prod.s, kHostLimitS, std::string(name(pull)) + " (pull)", &prod_done));
  out->host_ms = ms_between(t0, std::max(gemm_done, prod_done));
  CUDA_ASSERT(cudaMemcpy(out->err, pc.dp.err.p, sizeof out->err, cudaMemcpyDeviceToHost));
}

std::uint32_t first_epoch(std::mt19937_64& rng) {
  return 2u + static_cast<std::uint32_t>(rng() % 0x7FFF0000u);
}

void peer_pull_beside_full_grid(Pull pull) {
  const std::string skip = two_gpu_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  int completed = 0, timed_out = 0;
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    const Seed seed(config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    const std::uint32_t epoch = first_epoch(rng);
    PeerGridCase pc;
    ASSERT_NO_FATAL_FAILURE(setup(pc, config, rng, epoch - 1));
    const int pivot = static_cast<int>(rng() % kChunks);
    const std::string what = std::string(config.name) + " grid " + std::to_string(pc.grid) + "/" +
                             std::to_string(pc.sms) + " SMs, " + name(pull) + ", pivot " +
                             std::to_string(pivot);
    SCOPED_TRACE(what);
    CallResult r;
    ASSERT_NO_FATAL_FAILURE(run_call(pc, pull, pivot, epoch, &r));
    if (r.err[0] == 0) {
      ++completed;
      std::printf("  OUTCOME %s: completed in %.3f ms\n", what.c_str(), r.host_ms);
      ASSERT_NO_FATAL_FAILURE(expect_correct(*pc.hp, pc.dp, what));
    } else {
      ++timed_out;
      std::printf("  OUTCOME %s: TIMED OUT on chunk %u (flag %u, epoch %u): the pull needs SMs\n",
                  what.c_str(), r.err[0] - 1, r.err[1], r.err[2]);
      ADD_FAILURE() << what << ": " << nat::native_gemm_error_message(r.err, kTimeoutNs)
                    << "\nthe peer pull did not run beside the full grid: it needs SMs, and "
                       "native must not be planned with it (apply_peer_copy_probe)";
    }
    // The device is still usable: the same call with copy-engine chunks.
    CallResult again;
    ASSERT_NO_FATAL_FAILURE(run_call(pc, Pull::pinned_host, pivot, epoch + 1, &again));
    ASSERT_EQ(0u, again.err[0]) << nat::native_gemm_error_message(again.err, kTimeoutNs);
    ASSERT_NO_FATAL_FAILURE(expect_correct(*pc.hp, pc.dp, what + ", then pinned host"));
  }
  std::printf("  OUTCOME summary (%s): %d configs completed, %d timed out\n", name(pull), completed,
              timed_out);
}

TEST(PeerCopyNativeGrid, MemcpyDefaultBesideFullGrid) {
  peer_pull_beside_full_grid(Pull::memcpy_default);
}

TEST(PeerCopyNativeGrid, BatchPreferOverlapBesideFullGrid) {
  peer_pull_beside_full_grid(Pull::batch_prefer_overlap);
}

}  // namespace
