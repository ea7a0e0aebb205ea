// Do copies from a peer GPU need SMs? (cuda/nccl/peer_copy_probe.hpp.) The
// native algorithm is only safe when they do not: its persistent grid holds
// every SM while it waits for them. Outcomes and what they mean:
//   copy engines  the copy finished while a grid held every thread slot of
//                 every SM: it needs no SM; native may wait on it.
//   needs SMs     it finished only after the grid's bounded waits gave up:
//                 native must not wait on it (peer_copies_need_sms; the
//                 planner takes pipelined: apply_peer_copy_probe).
//   inconclusive  the grid never held every SM (other work on the GPU).
//   failed        the copy could not run, or its bytes were wrong.
//
//   PeerCopyVerdict.*                            pure, no GPU: which verdicts block native,
//                                                the reason, the planner's caps
//   PeerCopyProbe.PinnedHostIsOnCopyEngines      1 GPU: the probe's own check: host->device
//                                                copies use the copy engines, so anything but
//                                                "copy engines" means the probe is broken
//   PeerCopyProbe.SameGpuCopyNeedsSms            1 GPU: the probe's other check: a same-GPU
//                                                cudaMemcpyAsync ran on SMs (it hung beside
//                                                the native grid, producer_full_grid_test), so
//                                                anything but "needs SMs" means the probe cannot
//                                                see an SM copy (or that fact changed)
//   PeerCopyProbe.SameGpuBatchPreferOverlap      1 GPU: reported, not asserted: whether the
//                                                batch API's overlap flag moves a same-GPU copy
//                                                to the copy engines on this driver
//   PeerCopyProbe.PeerGpuBesideFullGrid          2 GPUs: source cudaMalloc'd on the other GPU
//                                                (peer access on), both directions, both
//                                                methods: must be "copy engines"
//   PeerCopyProbe.NcclWindowPeerBesideFullGrid   2 GPUs: the source the transport pulls from,
//                                                rank 1's NCCL window as mapped on GPU 0
//                                                (ncclGetPeerPointer), both methods: must be
//                                                "copy engines"
// Every probe is bounded (its grid's waits time out; the host bounds the rest).
#include "cuda/nccl/peer_copy_probe.hpp"

#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/rank_threads.hpp"
#include "cuda/nccl/device_kernels.hpp"
#include "nccl/nccl_support.hpp"

namespace asynctp::nccl {
namespace {

namespace nt = asynctp_test::nccl;

constexpr CopyMethod kMethods[] = {CopyMethod::memcpy_async,
                                   CopyMethod::memcpy_batch_prefer_overlap};

PeerCopyProbe probe_with(CopyVerdict verdict) {
  PeerCopyProbe p;
  p.verdict = verdict;
  p.detail = "the probe's line";
  return p;
}

TEST(PeerCopyVerdict, OnlyNeedsSmsBlocksNative) {
  for (CopyVerdict v : {CopyVerdict::copy_engines, CopyVerdict::inconclusive, CopyVerdict::failed,
                        CopyVerdict::needs_sms}) {
    SCOPED_TRACE(to_string(v));
    const PeerCopyProbe probe = probe_with(v);
    const bool blocks = v == CopyVerdict::needs_sms;
    EXPECT_EQ(blocks, peer_copies_need_sms(probe));
    EXPECT_EQ(blocks, peer_copy_native_blocker(probe).has_value());
    core::BackendCaps caps;
    caps.native_supported = true;
    apply_peer_copy_probe(probe, caps);
    EXPECT_EQ(!blocks, caps.native_supported);
    EXPECT_EQ(blocks, !caps.native_unsupported_reason.empty());
  }
}

TEST(PeerCopyVerdict, TheReasonNamesTheMethodAndTheEvidence) {
  PeerCopyProbe probe = probe_with(CopyVerdict::needs_sms);
  probe.method = CopyMethod::memcpy_batch_prefer_overlap;
  const auto why = peer_copy_native_blocker(probe);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(std::string::npos, why->find("cudaMemcpyBatchAsync(PreferOverlapWithCompute)")) << *why;
  EXPECT_NE(std::string::npos, why->find("run on SMs")) << *why;
  EXPECT_NE(std::string::npos, why->find("the probe's line")) << *why;
}

// A device buffer of `bytes` on `device` holding a byte pattern.
struct PatternBuffer {
  void* p = nullptr;
  ~PatternBuffer() {
    if (p) (void)cudaFree(p);
  }
  cudaError_t make(int device, std::size_t bytes) {
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMalloc(&p, bytes);
    std::vector<unsigned char> pattern(bytes);
    for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>(i * 131 + 7);
    if (e == cudaSuccess) e = cudaMemcpy(p, pattern.data(), bytes, cudaMemcpyHostToDevice);
    return e;
  }
};

constexpr std::size_t kBytes = 16u << 20;

void report(const PeerCopyProbe& probe) { std::printf("  OUTCOME %s\n", probe.detail.c_str()); }

TEST(PeerCopyProbe, PinnedHostIsOnCopyEngines) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  void* host = nullptr;
  CUDA_ASSERT(cudaHostAlloc(&host, kBytes, cudaHostAllocDefault));
  std::memset(host, 0x5A, kBytes);
  for (CopyMethod method : kMethods) {
    const PeerCopyProbe probe = probe_copy_beside_full_grid(0, host, "pinned host memory", method);
    report(probe);
    EXPECT_EQ(CopyVerdict::copy_engines, probe.verdict)
        << probe.detail << "\nhost->device copies use the copy engines: the probe is broken";
  }
  CUDA_ASSERT(cudaFreeHost(host));
}

TEST(PeerCopyProbe, SameGpuCopyNeedsSms) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  PatternBuffer source;
  CUDA_ASSERT(source.make(0, kBytes));
  const PeerCopyProbe probe =
      probe_copy_beside_full_grid(0, source.p, "GPU 0 (same GPU)", CopyMethod::memcpy_async);
  report(probe);
  EXPECT_EQ(CopyVerdict::needs_sms, probe.verdict)
      << probe.detail
      << "\na same-GPU cudaMemcpyAsync ran on SMs beside the native grid: either the probe "
         "cannot see an SM copy, or this driver moved such copies to the copy engines "
         "(then DESIGN.md's deadlock rule and producer_full_grid_test need a second look)";
}

TEST(PeerCopyProbe, SameGpuBatchPreferOverlap) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  PatternBuffer source;
  CUDA_ASSERT(source.make(0, kBytes));
  const PeerCopyProbe probe = probe_copy_beside_full_grid(0, source.p, "GPU 0 (same GPU)",
                                                          CopyMethod::memcpy_batch_prefer_overlap);
  report(probe);
  EXPECT_NE(CopyVerdict::inconclusive, probe.verdict) << probe.detail;
}

// "" when GPU `a` can map GPU `b`'s memory (peer access enabled now).
std::string enable_peer_access(int a, int b) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) {
    (void)cudaGetLastError();
    return "GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b) +
           "'s memory (no P2P: the transport would not run native there)";
  }
  cudaSetDevice(a);
  const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
    return std::string("cudaDeviceEnablePeerAccess: ") + cudaGetErrorName(e);
  }
  (void)cudaGetLastError();
  return "";
}

TEST(PeerCopyProbe, PeerGpuBesideFullGrid) {
  ASYNCTP_REQUIRE_GPUS(2, false);
  for (const auto& [device, peer] : {std::pair{0, 1}, std::pair{1, 0}}) {
    const std::string why = enable_peer_access(device, peer);
    if (!why.empty()) GTEST_SKIP() << why;
    PatternBuffer source;
    CUDA_ASSERT(source.make(peer, kBytes));
    for (CopyMethod method : kMethods) {
      const PeerCopyProbe probe = probe_copy_beside_full_grid(
          device, source.p, "GPU " + std::to_string(peer) + " (peer, cudaMalloc)", method);
      report(probe);
      EXPECT_EQ(CopyVerdict::copy_engines, probe.verdict)
          << probe.detail << "\npeer copies need SMs here: the planner must avoid native "
          << "(apply_peer_copy_probe)";
    }
  }
}

#define NCCL_ASSERT(call)                                                                  \
  do {                                                                                     \
    const ncclResult_t asynctp_r_ = (call);                                                \
    ASSERT_EQ(ncclSuccess, asynctp_r_) << #call << ": " << ncclGetErrorString(asynctp_r_); \
  } while (0)

TEST(PeerCopyProbe, NcclWindowPeerBesideFullGrid) {
  ASYNCTP_REQUIRE_GPUS(2, false);
  constexpr int kWorld = 2;
  std::vector<ncclComm_t> comms(kWorld, nullptr);
  std::vector<int> devices = {0, 1};
  NCCL_ASSERT(ncclCommInitAll(comms.data(), kWorld, devices.data()));
  std::vector<void*> buffers(kWorld, nullptr);
  std::vector<ncclWindow_t> windows(kWorld, nullptr);
  std::vector<std::string> errors(kWorld);
  // Window registration is collective: one thread per rank.
  core::run_on_rank_threads(kWorld, [&](int r) {
    const auto k = static_cast<std::size_t>(r);
    cudaSetDevice(r);
    ncclResult_t e = ncclMemAlloc(&buffers[k], kBytes);
    if (e == ncclSuccess) {
      e = ncclCommWindowRegister(comms[k], buffers[k], kBytes, &windows[k], NCCL_WIN_DEFAULT);
    }
    if (e != ncclSuccess) errors[k] = ncclGetErrorString(e);
  });
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ("", errors[static_cast<std::size_t>(r)]) << "rank " << r << " window";
  }
  if (errors[0].empty() && errors[1].empty()) {
    // Rank 1's buffer holds the pattern; rank 0 learns where it is mapped.
    std::vector<unsigned char> pattern(kBytes);
    for (std::size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<unsigned char>(i * 29 + 3);
    cudaSetDevice(1);
    EXPECT_EQ(cudaSuccess, cudaMemcpy(buffers[1], pattern.data(), kBytes, cudaMemcpyHostToDevice));
    cudaSetDevice(0);
    void** peers_device = nullptr;
    std::vector<void*> peers(kWorld, nullptr);
    EXPECT_EQ(cudaSuccess, cudaMalloc(&peers_device, sizeof(void*) * kWorld));
    EXPECT_EQ(cudaSuccess, enqueue_peer_pointers(windows[0], kWorld, peers_device, nullptr));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(peers.data(), peers_device, sizeof(void*) * kWorld,
                                      cudaMemcpyDeviceToHost));
    (void)cudaFree(peers_device);
    EXPECT_NE(nullptr, peers[1]) << "NCCL gave no mapping of rank 1's window on GPU 0";
    if (peers[1]) {
      for (CopyMethod method : kMethods) {
        const PeerCopyProbe probe = probe_copy_beside_full_grid(
            0, peers[1], "rank 1's NCCL window on GPU 1 (ncclGetPeerPointer)", method);
        report(probe);
        EXPECT_EQ(CopyVerdict::copy_engines, probe.verdict)
            << probe.detail << "\nthe transport's pulls need SMs here: the planner must avoid "
            << "native (apply_peer_copy_probe)";
      }
    }
  }
  core::run_on_rank_threads(kWorld, [&](int r) {
    const auto k = static_cast<std::size_t>(r);
    cudaSetDevice(r);
    if (windows[k]) (void)ncclCommWindowDeregister(comms[k], windows[k]);
    if (buffers[k]) (void)ncclMemFree(buffers[k]);
    (void)ncclCommDestroy(comms[k]);
  });
}

}  // namespace
}  // namespace asynctp::nccl
