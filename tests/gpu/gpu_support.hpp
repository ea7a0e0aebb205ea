// Support for the GPU tests: the skip rule, CUDA status checks, RAII device
// resources, a bounded wait, and a host-side problem (bf16 inputs, float64
// reference) shared by the native-kernel tests.
//
// Nothing here touches CUDA at static-initialization time: the test binary is
// listed (gtest_discover_tests) at build time on machines without a GPU or a
// driver, and every test must then skip itself cleanly. Every test starts
// with ASYNCTP_REQUIRE_SM90().
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/tensor.hpp"
#include "async_input_gemm.hpp"
#include "core/reference.hpp"
#include "support/host_tensor.hpp"

namespace asynctp_test::gpu {

// "" when device 0 is a usable sm_90 GPU; otherwise why the GPU tests skip.
// Asked once per process (lazily, never at static-init time).
inline const std::string& sm90_skip_reason() {
  static const std::string reason = []() -> std::string {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      const std::string why = std::string("no usable CUDA runtime/driver (cudaGetDeviceCount: ") +
                              cudaGetErrorName(e) + ")";
      (void)cudaGetLastError();  // clear, so nothing later sees this status
      return why;
    }
    if (count <= 0) return "no CUDA device";
    int major = 0, minor = 0;
    if (cudaSetDevice(0) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      return "cannot query CUDA device 0";
    }
    if (major != 9 || minor != 0) {
      return "device 0 is sm_" + std::to_string(major) + std::to_string(minor) +
             "; the native kernel needs sm_90 (Hopper)";
    }
    return "";
  }();
  return reason;
}

#define ASYNCTP_REQUIRE_SM90()                                                       \
  do {                                                                               \
    const std::string& asynctp_skip_ = ::asynctp_test::gpu::sm90_skip_reason();      \
    if (!asynctp_skip_.empty()) GTEST_SKIP() << asynctp_skip_;                       \
  } while (0)

// ASSERT that a CUDA call succeeded (evaluates the call once).
#define CUDA_ASSERT(call)                                                                     \
  do {                                                                                        \
    const cudaError_t asynctp_e_ = (call);                                                    \
    ASSERT_EQ(cudaSuccess, asynctp_e_)                                                        \
        << #call << ": " << cudaGetErrorName(asynctp_e_) << ": " << cudaGetErrorString(asynctp_e_); \
  } while (0)

// RAII owners; allocation goes through a member that returns the status so a
// test can CUDA_ASSERT it.
struct DeviceBuffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p) (void)cudaFree(p);
  }
  cudaError_t alloc(std::size_t n) {
    bytes = n;
    return cudaMalloc(&p, n);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

struct PinnedBuffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (p) (void)cudaFreeHost(p);
  }
  cudaError_t alloc(std::size_t n, unsigned flags) {
    bytes = n;
    return cudaHostAlloc(&p, n, flags);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s) (void)cudaStreamDestroy(s);
  }
  cudaError_t create() { return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e) (void)cudaEventDestroy(e);
  }
  cudaError_t create() { return cudaEventCreate(&e); }
};

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Polls `stream` until its work is done; returns the stream's status. A
// kernel still running after `limit_s` is a hang: the test records a
// failure and the process aborts (a running persistent kernel cannot be
// stopped, and the test must never hang). *done_at (when given) gets the
// host time the poll first saw the work complete.
inline cudaError_t wait_stream_bounded(cudaStream_t stream, double limit_s, const std::string& what,
                                       Clock::time_point* done_at = nullptr) {
  const auto start = Clock::now();
  while (true) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q != cudaErrorNotReady) {
      if (done_at) *done_at = Clock::now();
      return q;
    }
    if (ms_between(start, Clock::now()) > limit_s * 1e3) {
      ADD_FAILURE() << "HANG: " << what << " still running after " << limit_s << " s";
      std::fprintf(stderr, "HANG: %s still running after %.1f s (test %s); aborting\n", what.c_str(),
                   limit_s, ::testing::UnitTest::GetInstance()->current_test_info()->name());
      std::fflush(stdout);
      std::fflush(stderr);
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

inline std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

// A multiple of 8 in [lo, hi] (lo, hi multiples of 8).
inline std::int64_t random_multiple_of_8(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  std::uniform_int_distribution<std::int64_t> d(lo / 8, hi / 8);
  return d(rng) * 8;
}

// A random epoch: nonzero, and with epoch - 1 (a stale value) nonzero too.
inline std::uint32_t random_epoch(std::mt19937_64& rng) {
  std::uniform_int_distribution<std::uint32_t> d(2u, 0xFFFFFFF0u);
  return d(rng);
}

// The host side of one native GEMM problem: A (world_size * m_per_chunk x k,
// row-major) and B (k x n, row- or column-major) as bf16 with normally
// distributed values, and the float64 product of the bf16 values.
struct HostProblem {
  int world_size = 1;
  std::int64_t m_per_chunk = 0, n = 0, k = 0;
  bool b_col_major = false;
  HostTensor a, b;
  std::vector<double> reference;

  std::int64_t m() const { return world_size * m_per_chunk; }
  std::size_t a_bytes() const { return a.bytes(); }
  std::size_t chunk_bytes() const {
    return static_cast<std::size_t>(m_per_chunk * k) * sizeof(std::uint16_t);
  }
  std::size_t c_bytes() const {
    return static_cast<std::size_t>(m() * n) * sizeof(std::uint16_t);
  }

  HostProblem(int w, std::int64_t mpc, std::int64_t n_, std::int64_t k_, bool bcol,
              std::mt19937_64& rng)
      : world_size(w), m_per_chunk(mpc), n(n_), k(k_), b_col_major(bcol),
        a(asynctp::DType::bf16, w * mpc, k_), b(asynctp::DType::bf16, k_, n_, bcol) {
    a.fill_normal(rng);
    b.fill_normal(rng);
    // The shards as the all-gather sees them: chunk c = rank c's rows.
    std::vector<asynctp::TensorView> shards;
    const asynctp::TensorView av = a.view();
    for (int c = 0; c < w; ++c) {
      asynctp::TensorView s = av;
      s.data = static_cast<std::uint16_t*>(av.data) + c * mpc * k_;
      s.rows = mpc;
      shards.push_back(s);
    }
    reference = asynctp::core::reference_all_gather_matmul(shards, b.view());
  }
};

// Device copies of a problem's inputs, C (with a guard region after it) and
// the error words.
struct DeviceProblem {
  DeviceBuffer a, b, c, err;
  static constexpr std::size_t kGuardBytes = 64 * 1024;
  static constexpr unsigned char kGuardByte = 0xA5;
};

// Allocates and uploads A (unless gated: then A starts as NaN), B; C is
// poisoned (core::poison on the host, copied) with a guard region after it.
inline void upload(const HostProblem& hp, DeviceProblem& dp, bool a_poisoned = false) {
  CUDA_ASSERT(dp.a.alloc(hp.a_bytes()));
  CUDA_ASSERT(dp.b.alloc(hp.b.bytes()));
  CUDA_ASSERT(dp.c.alloc(hp.c_bytes() + DeviceProblem::kGuardBytes));
  CUDA_ASSERT(dp.err.alloc(3 * sizeof(std::uint32_t)));
  if (a_poisoned) {
    CUDA_ASSERT(cudaMemset(dp.a.p, 0xFF, hp.a_bytes()));  // bf16 0xFFFF = NaN
  } else {
    CUDA_ASSERT(cudaMemcpy(dp.a.p, hp.a.data(), hp.a_bytes(), cudaMemcpyHostToDevice));
  }
  CUDA_ASSERT(cudaMemcpy(dp.b.p, hp.b.data(), hp.b.bytes(), cudaMemcpyHostToDevice));
  HostTensor c(asynctp::DType::bf16, hp.m(), hp.n);
  asynctp::core::poison(c.view());
  CUDA_ASSERT(cudaMemcpy(dp.c.p, c.data(), hp.c_bytes(), cudaMemcpyHostToDevice));
  CUDA_ASSERT(cudaMemset(static_cast<char*>(dp.c.p) + hp.c_bytes(), DeviceProblem::kGuardByte,
                         DeviceProblem::kGuardBytes));
  CUDA_ASSERT(cudaMemset(dp.err.p, 0, 3 * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaDeviceSynchronize());  // later work runs on non-blocking streams
}

// Re-poisons C and zeroes the error words (between runs on one upload).
inline void reset_output(const HostProblem& hp, DeviceProblem& dp) {
  HostTensor c(asynctp::DType::bf16, hp.m(), hp.n);
  asynctp::core::poison(c.view());
  CUDA_ASSERT(cudaMemcpy(dp.c.p, c.data(), hp.c_bytes(), cudaMemcpyHostToDevice));
  CUDA_ASSERT(cudaMemset(dp.err.p, 0, 3 * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaDeviceSynchronize());
}

inline asynctp::cuda::native::NativeGemmArgs make_args(const HostProblem& hp,
                                                       const DeviceProblem& dp, int pivot,
                                                       const std::uint32_t* flags,
                                                       std::uint32_t epoch,
                                                       std::uint64_t timeout_ns, int max_sms = 0) {
  asynctp::cuda::native::NativeGemmArgs args;
  args.a = dp.a.p;
  args.b = dp.b.p;
  args.b_col_major = hp.b_col_major;
  args.c = dp.c.p;
  args.m_per_chunk = hp.m_per_chunk;
  args.n = hp.n;
  args.k = hp.k;
  args.world_size = hp.world_size;
  args.pivot = pivot;
  args.chunk_flags = flags;
  args.epoch = epoch;
  args.timeout_ns = timeout_ns;
  args.error_words = dp.err.as<std::uint32_t>();
  args.max_sms = max_sms;
  return args;
}

// Reads C and the error words back and checks them: every element written,
// relative Frobenius error within the bf16 bound, the guard after C intact,
// the error words zero.
inline void expect_correct(const HostProblem& hp, const DeviceProblem& dp,
                           const std::string& what) {
  HostTensor c(asynctp::DType::bf16, hp.m(), hp.n);
  CUDA_ASSERT(cudaMemcpy(c.data(), dp.c.p, hp.c_bytes(), cudaMemcpyDeviceToHost));
  std::vector<unsigned char> guard(DeviceProblem::kGuardBytes);
  CUDA_ASSERT(cudaMemcpy(guard.data(), static_cast<const char*>(dp.c.p) + hp.c_bytes(),
                         guard.size(), cudaMemcpyDeviceToHost));
  std::uint32_t err[3] = {1, 1, 1};
  CUDA_ASSERT(cudaMemcpy(err, dp.err.p, sizeof err, cudaMemcpyDeviceToHost));

  const auto cmp = asynctp::core::compare_to_reference(c.view(), hp.reference);
  const double tol = asynctp::core::error_tolerance(asynctp::DType::bf16);
  EXPECT_EQ(0, cmp.unwritten) << what << ": elements left unwritten (poison)";
  EXPECT_EQ(0, cmp.non_finite) << what << ": non-finite elements";
  EXPECT_LE(cmp.relative_frobenius_error, tol) << what << ": relative Frobenius error";
  std::size_t bad_guard = 0;
  for (unsigned char g : guard) bad_guard += g != DeviceProblem::kGuardByte;
  EXPECT_EQ(0u, bad_guard) << what << ": bytes written past the end of C";
  EXPECT_EQ(0u, err[0]) << what << ": error words " << err[0] << "/" << err[1] << "/" << err[2]
                        << ": " << asynctp::cuda::native::native_gemm_error_message(err, 1);
  std::printf("  %-60s rel_err %.3e (tol %.3e)\n", what.c_str(), cmp.relative_frobenius_error, tol);
}

inline int sm_count() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  return sms;
}

}  // namespace asynctp_test::gpu
