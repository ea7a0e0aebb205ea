// Harness for the native sm_90a async-input GEMM (src/cuda/native): one
// executable that, on an H200, checks correctness against float64 and
// cuBLAS, proves the chunk gate waits (host thread releases chunks late and
// out of order, data arriving by copy engine), checks the timeout path, and
// times every config against cuBLASLt on the headline shapes (8192^3, and
// M = 4096..32768 with the (n, k) of common tensor-parallel layers); the
// reduce-scatter side's configs (rs_..., whose epilogue releases each chunk)
// are timed too, so that the release's cost shows beside the same tile's
// all-gather config.
//
//   native_kernel_bench [--tests] [--speed] [--json FILE] [--reps N]
//                       [--kernels id,id,...] [--swizzles 1,2,4,8] [--layouts row,col]
//                       [--quick] [--free-sms N] [--poll [--poll-gbps G]] [--placement]
//                       [--chunks N]
//
// --free-sms (every native variant), --poll and --placement (the
// reduce-scatter ones) time the kernels in the loopback reduce-scatter
// call's surroundings (see g_free_sms below). --chunks sets how many chunks
// the speed runs' grids see (default 8, the W of the loopback benchmarks):
// the reduce-scatter's row pieces are chunks of M / (W * pieces) rows
// (--placement then places N - 1 chunks of M / N rows).
// With neither --tests nor --speed it does both. Exits non-zero on any wrong
// value, failed check or CUDA error. The last lines are a short table.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "async_input_gemm.hpp"
#include "instances.hpp"
#include "kernel/chunk_gate.cuh"
#include "kernel/chunk_signal.cuh"

namespace nat = asynctp::cuda::native;
using nat::NativeGemmArgs;
using nat::NativeGemmConfig;
using Clock = std::chrono::steady_clock;

#define CK(call)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "FATAL CUDA %s at %s:%d: %s\n", #call, __FILE__, __LINE__,    \
                   cudaGetErrorString(e_));                                               \
      std::fflush(stdout);                                                                \
      _exit(2);                                                                           \
    }                                                                                     \
  } while (0)
#define CKLT(call)                                                                        \
  do {                                                                                    \
    cublasStatus_t s_ = (call);                                                           \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                    \
      std::fprintf(stderr, "FATAL cuBLASLt %s at %s:%d: status %d\n", #call, __FILE__,   \
                   __LINE__, int(s_));                                                    \
      _exit(2);                                                                           \
    }                                                                                     \
  } while (0)

namespace {

int g_failures = 0;
void fail(const std::string& what) {
  ++g_failures;
  std::printf("FAIL: %s\n", what.c_str());
  std::fflush(stdout);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ------------------------------------------------------------------ data
__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Element (r, c) of a logical rows x cols matrix, uniform in [-1, 1), as bf16.
__host__ __device__ inline float random_value(uint64_t seed, uint64_t r, uint64_t c,
                                              uint64_t cols) {
  const uint64_t x = splitmix64(seed * 0x2545F4914F6CDD1Dull + r * cols + c);
  return float(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Fills a logical rows x cols matrix stored row-major (ld = cols) or
// column-major (ld = rows).
__global__ void fill_random(__nv_bfloat16* p, int64_t rows, int64_t cols, bool col_major,
                            uint64_t seed) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = col_major ? i % rows : i / cols;
    const int64_t c = col_major ? i / rows : i % cols;
    p[i] = __float2bfloat16(random_value(seed, r, c, cols));
  }
}

// sums[0] += sum (out - ref)^2, sums[1] += sum ref^2, *nan += NaNs in out
// (unwritten elements: the output is poisoned with NaN before each run).
__global__ void compare(const __nv_bfloat16* out, const __nv_bfloat16* ref, int64_t n,
                        double* sums, unsigned long long* nan) {
  double d2 = 0, r2 = 0;
  unsigned long long nans = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float o = __bfloat162float(out[i]), r = __bfloat162float(ref[i]);
    if (o != o) {
      ++nans;
      continue;
    }
    d2 += double(o - r) * double(o - r);
    r2 += double(r) * double(r);
  }
  for (int off = 16; off > 0; off /= 2) {
    d2 += __shfl_down_sync(0xffffffffu, d2, off);
    r2 += __shfl_down_sync(0xffffffffu, r2, off);
    nans += __shfl_down_sync(0xffffffffu, nans, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(sums, d2);
    atomicAdd(sums + 1, r2);
    atomicAdd(nan, nans);
  }
}

float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { CK(cudaMalloc(&p, n)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(p); }
};

void fill(void* p, int64_t rows, int64_t cols, bool col_major, uint64_t seed) {
  fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), rows, cols, col_major, seed);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());  // later work may run on non-blocking streams
}

void poison(void* p, size_t bytes, cudaStream_t s = nullptr) {
  CK(cudaMemsetAsync(p, 0xFF, bytes, s));  // 0xFFFF = bf16 NaN
}

struct Compared {
  double rel = 0;
  unsigned long long nans = 0;
};

Compared compare_device(const void* out, const void* ref, int64_t n) {
  static double* sums = nullptr;
  static unsigned long long* nan = nullptr;
  if (!sums) {
    CK(cudaMalloc(&sums, 2 * sizeof(double)));
    CK(cudaMalloc(&nan, sizeof(unsigned long long)));
  }
  CK(cudaMemset(sums, 0, 2 * sizeof(double)));
  CK(cudaMemset(nan, 0, sizeof(unsigned long long)));
  compare<<<1024, 256>>>(static_cast<const __nv_bfloat16*>(out),
                         static_cast<const __nv_bfloat16*>(ref), n, sums, nan);
  CK(cudaGetLastError());
  double h[2];
  unsigned long long hn;
  CK(cudaMemcpy(h, sums, sizeof h, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&hn, nan, sizeof hn, cudaMemcpyDeviceToHost));
  return {h[1] > 0 ? std::sqrt(h[0] / h[1]) : INFINITY, hn};
}

// float64 reference rows of C = A @ B (A row-major M x K, B logical K x N),
// computed from the same generator as the device data, on all host cores.
std::vector<double> reference_rows(uint64_t seed_a, uint64_t seed_b, int64_t k, int64_t n,
                                   const std::vector<int64_t>& rows) {
  std::vector<float> b(size_t(k * n));
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j) {
      // bf16-round exactly as the device does (round to nearest even)
      const float v = random_value(seed_b, kk, j, n);
      b[size_t(kk * n + j)] = __bfloat162float(__float2bfloat16(v));
    }
  std::vector<double> out(rows.size() * size_t(n), 0.0);
  const unsigned threads = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<double> acc(static_cast<size_t>(n));
      std::vector<float> arow(static_cast<size_t>(k));
      for (size_t ri = t; ri < rows.size(); ri += threads) {
        const int64_t r = rows[ri];
        for (int64_t kk = 0; kk < k; ++kk)
          arow[size_t(kk)] = __bfloat162float(__float2bfloat16(random_value(seed_a, r, kk, k)));
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t kk = 0; kk < k; ++kk) {
          const double av = arow[size_t(kk)];
          const float* brow = &b[size_t(kk * n)];
          for (int64_t j = 0; j < n; ++j) acc[size_t(j)] += av * double(brow[j]);
        }
        std::copy(acc.begin(), acc.end(), out.begin() + ri * size_t(n));
      }
    });
  }
  for (auto& th : pool) th.join();
  return out;
}

// Relative Frobenius error of the given rows of device C against float64;
// also counts NaN (unwritten) elements among them.
Compared compare_rows_f64(const void* c_dev, int64_t n, const std::vector<int64_t>& rows,
                          const std::vector<double>& ref) {
  std::vector<uint16_t> row(static_cast<size_t>(n));
  double d2 = 0, r2 = 0;
  unsigned long long nans = 0;
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    CK(cudaMemcpy(row.data(), static_cast<const uint16_t*>(c_dev) + rows[ri] * n, size_t(n) * 2,
                  cudaMemcpyDeviceToHost));
    for (int64_t j = 0; j < n; ++j) {
      const double o = bf16_to_float(row[size_t(j)]);
      const double r = ref[ri * size_t(n) + size_t(j)];
      if (o != o) {
        ++nans;
        continue;
      }
      d2 += (o - r) * (o - r);
      r2 += r * r;
    }
  }
  return {r2 > 0 ? std::sqrt(d2 / r2) : INFINITY, nans};
}

// ------------------------------------------------------------------ cuBLASLt
// Row-major C (M x N) = A (M x K) @ B (K x N, row- or column-major), bf16 in
// and out, fp32 compute; the heuristic's first algorithm, 32 MiB workspace.
class LtGemm {
 public:
  LtGemm() {
    CKLT(cublasLtCreate(&handle_));
    CK(cudaMalloc(&workspace_, kWorkspace));
  }
  ~LtGemm() {
    for (auto& [key, p] : plans_) {
      cublasLtMatmulDescDestroy(p.desc);
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.c);
    }
    cudaFree(workspace_);
    cublasLtDestroy(handle_);
  }
  void run(const void* a, const void* b, bool b_col_major, void* c, int64_t m, int64_t n,
           int64_t k, cudaStream_t stream) {
    const Plan& p = plan(m, n, k, b_col_major);
    const float alpha = 1.0f, beta = 0.0f;
    // Column-major view: C^T (n x m) = op(B) (n x k) @ A^T (k x m).
    CKLT(cublasLtMatmul(handle_, p.desc, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c, &p.algo,
                        workspace_, kWorkspace, stream));
  }

 private:
  static constexpr size_t kWorkspace = size_t(32) << 20;
  struct Plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
  };
  const Plan& plan(int64_t m, int64_t n, int64_t k, bool b_col_major) {
    const auto key = std::make_tuple(m, n, k, b_col_major);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan p{};
    CKLT(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = b_col_major ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    CKLT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKLT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (b_col_major) {
      CKLT(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, k, n, k));
    } else {
      CKLT(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, n, k, n));
    }
    CKLT(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, k, m, k));
    CKLT(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    CKLT(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kWorkspace;
    CKLT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                              sizeof ws));
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    CKLT(cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result,
                                        &count));
    cublasLtMatmulPreferenceDestroy(pref);
    if (count < 1) {
      std::fprintf(stderr, "FATAL cuBLASLt: no algorithm for %ldx%ldx%ld\n", long(m), long(n),
                   long(k));
      _exit(2);
    }
    p.algo = result.algo;
    return plans_.emplace(key, p).first->second;
  }
  cublasLtHandle_t handle_{};
  void* workspace_ = nullptr;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, Plan> plans_;
};

// ------------------------------------------------------------------ configs
struct Variant {
  NativeGemmConfig config{};  // value-initialized: the fields make_variant leaves are zero
  std::string name;
  const nat::detail::InstanceInfo* inst = nullptr;
};

const char* intern(const std::string& s) {  // stable storage for config names
  static std::deque<std::string> names;
  names.push_back(s);
  return names.back().c_str();
}

std::vector<nat::detail::InstanceInfo const*> all_instances() {
  return {
#define ASYNCTP_BENCH_LIST(id) &nat::detail::instance_##id(),
      ASYNCTP_NATIVE_INSTANCES(ASYNCTP_BENCH_LIST)
#undef ASYNCTP_BENCH_LIST
  };
}

// The reduce-scatter side's instances (ids "rs_..."): timed beside the
// all-gather side's in --speed (same GEMM, the epilogue that releases each
// chunk), not in the tests, which exercise the input gate.
std::vector<nat::detail::InstanceInfo const*> output_instances() {
  return {
#define ASYNCTP_BENCH_LIST(id) &nat::detail::instance_##id(),
      ASYNCTP_NATIVE_OUTPUT_INSTANCES(ASYNCTP_BENCH_LIST)
#undef ASYNCTP_BENCH_LIST
  };
}

bool releases_output(const nat::detail::InstanceInfo* i) {
  return std::strncmp(i->id, "rs_", 3) == 0;
}

Variant make_variant(const nat::detail::InstanceInfo* i, int swizzle) {
  Variant v;
  v.inst = i;
  NativeGemmConfig& c = v.config;
  c.sync = releases_output(i) ? nat::ChunkSync::release_output : nat::ChunkSync::acquire_input;
  c.schedule = i->schedule;
  c.tile_m = i->tile_m;
  c.tile_n = i->tile_n;
  c.tile_k = i->tile_k;
  c.cluster_m = i->cluster_m;
  c.cluster_n = i->cluster_n;
  c.m_granularity = i->tile_m * i->cluster_m;
  c.swizzle = swizzle;
  c.has_b_row_major = !i->b_col_major;
  c.has_b_col_major = i->b_col_major;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%s_%dx%dx%d_c%dx%d_s%d", releases_output(i) ? "rs_" : "",
                i->schedule == nat::KernelSchedule::kCooperative ? "coop" : "pp", i->tile_m,
                i->tile_n, i->tile_k, i->cluster_m, i->cluster_n, swizzle);
  v.name = buf;
  c.name = intern(v.name);
  return v;
}

// Device-memory flags all set to `epoch` (every chunk ready) and error words.
// The reduce-scatter side's words too: done flags (nobody waits for them
// here) and tile counters, zero before every launch (each launch leaves them
// zero).
struct ReadyFlags {
  uint32_t* flags = nullptr;
  uint32_t* err = nullptr;
  uint32_t* done_flags = nullptr;
  uint32_t* done_counters = nullptr;
  uint32_t* released = nullptr;  // the --poll-gbps poller's release word
  uint32_t epoch = 1;
  explicit ReadyFlags(int w) {
    CK(cudaMalloc(&flags, sizeof(uint32_t) * size_t(w)));
    CK(cudaMalloc(&err, 3 * sizeof(uint32_t)));
    CK(cudaMalloc(&done_flags, sizeof(uint32_t) * size_t(w)));
    CK(cudaMalloc(&done_counters, sizeof(uint32_t) * size_t(w)));
    CK(cudaMalloc(&released, sizeof(uint32_t)));
    std::vector<uint32_t> h(size_t(w), epoch);
    CK(cudaMemcpy(flags, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(err, 0, 12));
    CK(cudaMemset(done_flags, 0, sizeof(uint32_t) * size_t(w)));
    CK(cudaMemset(done_counters, 0, sizeof(uint32_t) * size_t(w)));
  }
  ~ReadyFlags() {
    cudaFree(flags);
    cudaFree(err);
    cudaFree(done_flags);
    cudaFree(done_counters);
    cudaFree(released);
  }
};

// args for variant v's side: a reduce-scatter instance releases into the
// done words instead of waiting on the chunk flags.
NativeGemmArgs for_side(const Variant& v, NativeGemmArgs args, const ReadyFlags& ready) {
  args.sync = v.config.sync;
  if (args.sync == nat::ChunkSync::release_output) {
    args.done_flags = ready.done_flags;
    args.done_counters = ready.done_counters;
  }
  return args;
}

NativeGemmArgs make_args(const void* a, const void* b, bool b_col, void* c, int w,
                         int64_t m_per_chunk, int64_t n, int64_t k, int pivot,
                         const uint32_t* flags, uint32_t epoch, uint32_t* err,
                         uint64_t timeout_ns = 2'000'000'000ull, int max_sms = 0) {
  NativeGemmArgs args;
  args.a = a;
  args.b = b;
  args.b_col_major = b_col;
  args.c = c;
  args.m_per_chunk = m_per_chunk;
  args.n = n;
  args.k = k;
  args.world_size = w;
  args.pivot = pivot;
  args.chunk_flags = flags;
  args.epoch = epoch;
  args.timeout_ns = timeout_ns;
  args.error_words = err;
  args.max_sms = max_sms;
  return args;
}

bool launch_checked(const Variant& v, const NativeGemmArgs& args, cudaStream_t s,
                    const std::string& what) {
  std::string reason;
  if (!nat::can_implement(v.config, args, &reason)) {
    fail(what + ": can_implement: " + reason);
    return false;
  }
  const cudaError_t e = nat::launch(v.config, args, nullptr, s);
  if (e != cudaSuccess) {
    fail(what + ": launch: " + cudaGetErrorString(e));
    return false;
  }
  return true;
}

// Waits for `ev` with a host deadline; a kernel that never ends is a failure
// (and the process cannot continue: it exits).
void wait_or_die(cudaEvent_t ev, double deadline_ms, const std::string& what) {
  const auto t0 = Clock::now();
  while (true) {
    const cudaError_t q = cudaEventQuery(ev);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) {
      fail(what + ": " + cudaGetErrorString(q));
      std::fflush(stdout);
      _exit(3);
    }
    if (ms_since(t0) > deadline_ms) {
      fail(what + ": kernel still running after " + std::to_string(deadline_ms) + " ms (HANG)");
      std::fflush(stdout);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// ------------------------------------------------------------------ tests
struct Shape {
  int w;
  int64_t m_per_chunk, n, k;
};

void correctness(const std::vector<Variant>& variants, LtGemm& lt, bool quick) {
  std::printf("\n== correctness: float64 reference (full or sampled rows) and cuBLASLt, poisoned C\n");
  std::printf("%-34s %-4s %-22s %5s %10s %10s %8s %6s\n", "config", "B", "shape (W x m, n, k)",
              "pivot", "rel_f64", "rel_cublas", "unwritten", "grid");
  // small: full float64 check. W=8 with N, K not multiples of the tile.
  // big: more tiles than SMs, several tiles per chunk; sampled float64 rows.
  std::vector<Shape> shapes = {{2, 512, 512, 512}, {8, 512, 384, 520}, {8, 1024, 4096, 2048}};
  if (quick) shapes.resize(2);
  const uint64_t seed_a = 0xA11CE, seed_b = 0xB0B;
  for (const Shape& s : shapes) {
    const int64_t m = s.w * s.m_per_chunk;
    const bool full = m * s.n * s.k <= int64_t(2) << 30;
    std::vector<int64_t> rows;
    if (full) {
      for (int64_t r = 0; r < m; ++r) rows.push_back(r);
    } else {  // rows from every chunk: first/last of each, and some inside
      for (int c = 0; c < s.w; ++c) {
        const int64_t base = c * s.m_per_chunk;
        for (int64_t off : {int64_t(0), int64_t(1), int64_t(127), int64_t(128),
                            s.m_per_chunk / 2 + 77, s.m_per_chunk - 1})
          rows.push_back(base + off);
      }
    }
    const auto t_ref = Clock::now();
    const std::vector<double> ref = reference_rows(seed_a, seed_b, s.k, s.n, rows);
    std::printf("# shape %dx%ld (m=%ld) n=%ld k=%ld: float64 reference of %zu rows in %.1f s\n",
                s.w, long(s.m_per_chunk), long(m), long(s.n), long(s.k), rows.size(),
                ms_since(t_ref) / 1e3);
    DeviceBuffer a(size_t(m * s.k * 2)), b_row(size_t(s.k * s.n * 2)), b_col(size_t(s.k * s.n * 2));
    DeviceBuffer c(size_t(m * s.n * 2)), c_ref(size_t(m * s.n * 2));
    fill(a.p, m, s.k, false, seed_a);
    fill(b_row.p, s.k, s.n, false, seed_b);
    fill(b_col.p, s.k, s.n, true, seed_b);
    ReadyFlags ready(s.w);
    for (bool bcol : {false, true}) {
      const void* b = bcol ? b_col.p : b_row.p;
      poison(c_ref.p, c_ref.bytes);
      lt.run(a.p, b, bcol, c_ref.p, m, s.n, s.k, nullptr);
      CK(cudaDeviceSynchronize());
      const Compared lt_f64 = compare_rows_f64(c_ref.p, s.n, rows, ref);
      std::printf("%-34s %-4s %5dx%-6ld %5ld %5ld %5s %10.2e %10s %8llu %6s\n", "cublasLt",
                  bcol ? "col" : "row", s.w, long(s.m_per_chunk), long(s.n), long(s.k), "-",
                  lt_f64.rel, "-", lt_f64.nans, "-");
      for (const Variant& v : variants) {
        if (v.inst->b_col_major != bcol) continue;
        NativeGemmArgs probe = make_args(a.p, b, bcol, c.p, s.w, s.m_per_chunk, s.n, s.k, 0,
                                         ready.flags, ready.epoch, ready.err);
        std::string reason;
        if (!nat::can_implement(v.config, probe, &reason)) {
          std::printf("%-34s %-4s skipped: %s\n", v.name.c_str(), bcol ? "col" : "row",
                      reason.c_str());
          continue;
        }
        for (int pivot : {0, s.w - 1}) {
          for (int max_sms : {0, 66}) {
            if (max_sms && (pivot != 0 || full)) continue;  // one grid-limited run per shape
            NativeGemmArgs args = make_args(a.p, b, bcol, c.p, s.w, s.m_per_chunk, s.n, s.k,
                                            pivot, ready.flags, ready.epoch, ready.err,
                                            2'000'000'000ull, max_sms);
            poison(c.p, c.bytes);
            const std::string what = v.name + (bcol ? " bcol" : " brow") + " pivot " +
                                     std::to_string(pivot) + " max_sms " + std::to_string(max_sms);
            if (!launch_checked(v, args, nullptr, what)) continue;
            CK(cudaDeviceSynchronize());
            uint32_t err[3];
            CK(cudaMemcpy(err, ready.err, 12, cudaMemcpyDeviceToHost));
            const Compared f64 = compare_rows_f64(c.p, s.n, rows, ref);
            const Compared vs_lt = compare_device(c.p, c_ref.p, m * s.n);
            const int grid = nat::grid_size(v.config, args);
            char label[48];
            std::snprintf(label, sizeof label, "%s%s", v.name.c_str(), max_sms ? " (max_sms 66)" : "");
            std::printf("%-34s %-4s %5dx%-6ld %5ld %5ld %5d %10.2e %10.2e %8llu %6d\n", label,
                        bcol ? "col" : "row", s.w, long(s.m_per_chunk), long(s.n), long(s.k),
                        pivot, f64.rel, vs_lt.rel, vs_lt.nans + f64.nans, grid);
            if (!(f64.rel < 1e-2) || !(vs_lt.rel < 1e-2) || f64.nans || vs_lt.nans || err[0])
              fail(what + ": wrong result");
            if (max_sms && grid > max_sms) fail(what + ": grid " + std::to_string(grid) + " > max_sms");
          }
        }
      }
    }
  }
}

// Chunks arrive late and out of order: A's rows start as NaN, a host thread
// copies each chunk from pinned host memory (copy engine) and then releases
// its flag in host-mapped memory. The result must equal the ungated run bit
// for bit, and the kernel must have run at least until the last release.
void gating(const std::vector<Variant>& variants) {
  std::printf("\n== gating: chunks copied from pinned host memory and released by a host thread, late and out of order\n");
  const Shape s{8, 1024, 4096, 2048};
  const int64_t m = s.w * s.m_per_chunk;
  const size_t a_bytes = size_t(m * s.k * 2), chunk_bytes = size_t(s.m_per_chunk * s.k * 2);
  DeviceBuffer a_real(a_bytes), a(a_bytes), b(size_t(s.k * s.n * 2));
  DeviceBuffer c(size_t(m * s.n * 2)), c_ref(size_t(m * s.n * 2));
  fill(a_real.p, m, s.k, false, 0x5EED1);
  fill(b.p, s.k, s.n, false, 0x5EED2);
  uint16_t* a_host = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&a_host), a_bytes, cudaHostAllocDefault));
  CK(cudaMemcpy(a_host, a_real.p, a_bytes, cudaMemcpyDeviceToHost));
  uint32_t* flags_host = nullptr;
  uint32_t* flags_dev = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&flags_host), sizeof(uint32_t) * s.w,
                   cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_dev), flags_host, 0));
  ReadyFlags ready(s.w);
  cudaStream_t ks, cs;
  CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  uint32_t epoch = 100;

  std::printf("%-30s %5s %-26s %9s %12s %10s %8s %s\n", "config", "pivot", "release order",
              "delay_ms", "last_rel_ms", "kernel_ms", "bitwise", "errors");
  for (const Variant& v : variants) {
    if (v.inst->b_col_major) continue;
    for (int pivot : {0, s.w - 1}) {
      // reference: every chunk ready in device memory
      NativeGemmArgs ref_args = make_args(a_real.p, b.p, false, c_ref.p, s.w, s.m_per_chunk, s.n,
                                          s.k, pivot, ready.flags, ready.epoch, ready.err);
      poison(c_ref.p, c_ref.bytes);
      if (!launch_checked(v, ref_args, nullptr, v.name + " gating reference")) continue;
      CK(cudaDeviceSynchronize());

      ++epoch;
      for (int i = 0; i < s.w; ++i) std::atomic_ref<uint32_t>(flags_host[i]).store(epoch - 1);
      CK(cudaMemset(a.p, 0xFF, a_bytes));  // NaN until the chunk arrives
      poison(c.p, c.bytes);
      CK(cudaMemset(ready.err, 0, 12));
      CK(cudaDeviceSynchronize());
      // Release order: reversed from the pivot's predecessor, the pivot last
      // but one (so the first tiles the kernel wants come late).
      std::vector<int> order;
      for (int i = 1; i <= s.w; ++i) order.push_back((pivot - i + 2 * s.w) % s.w);
      std::swap(order[size_t(s.w - 1)], order[size_t(s.w - 2)]);
      const double delay_ms = 20.0, step_ms = 2.0;
      NativeGemmArgs args = make_args(a.p, b.p, false, c.p, s.w, s.m_per_chunk, s.n, s.k, pivot,
                                      flags_dev, epoch, ready.err, 5'000'000'000ull);
      CK(cudaEventRecord(e0, ks));
      if (!launch_checked(v, args, ks, v.name + " gated")) continue;
      CK(cudaEventRecord(e1, ks));
      const auto t0 = Clock::now();
      double last_release_ms = 0;
      std::thread producer([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
        for (int chunk : order) {
          CK(cudaMemcpyAsync(static_cast<char*>(a.p) + chunk * chunk_bytes,
                             reinterpret_cast<char*>(a_host) + chunk * chunk_bytes, chunk_bytes,
                             cudaMemcpyHostToDevice, cs));
          CK(cudaStreamSynchronize(cs));
          std::atomic_ref<uint32_t>(flags_host[chunk]).store(epoch, std::memory_order_release);
          last_release_ms = ms_since(t0);
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
        }
      });
      wait_or_die(e1, 30000, v.name + " gated");
      producer.join();
      float kernel_ms = 0;
      CK(cudaEventElapsedTime(&kernel_ms, e0, e1));
      uint32_t err[3];
      CK(cudaMemcpy(err, ready.err, 12, cudaMemcpyDeviceToHost));
      std::vector<uint16_t> h(size_t(m * s.n)), h_ref(size_t(m * s.n));
      CK(cudaMemcpy(h.data(), c.p, h.size() * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(h_ref.data(), c_ref.p, h_ref.size() * 2, cudaMemcpyDeviceToHost));
      const bool exact = std::memcmp(h.data(), h_ref.data(), h.size() * 2) == 0;
      std::string order_s;
      for (int chunk : order) order_s += std::to_string(chunk);
      std::printf("%-30s %5d %-26s %9.1f %12.2f %10.2f %8s %u/%u/%u\n", v.name.c_str(), pivot,
                  order_s.c_str(), delay_ms, last_release_ms, kernel_ms, exact ? "exact" : "DIFF",
                  err[0], err[1], err[2]);
      if (!exact) fail(v.name + " gated: result differs from the ungated run");
      if (err[0]) fail(v.name + " gated: error words set");
      // The kernel cannot finish before the last chunk was released (minus
      // the launch latency between the host clock and the GPU events).
      if (kernel_ms < last_release_ms - 1.0)
        fail(v.name + " gated: kernel finished before the last release (did not wait)");
    }
  }
  CK(cudaStreamDestroy(ks));
  CK(cudaStreamDestroy(cs));
  CK(cudaFreeHost(a_host));
  CK(cudaFreeHost(flags_host));
}

// One chunk never arrives: with timeout 50 ms the kernel must end, and the
// error words must name that chunk, its flag value and the epoch.
void timeout_path(const std::vector<Variant>& variants) {
  std::printf("\n== timeout: one chunk never released, timeout_ns = 50 ms\n");
  const Shape s{8, 1024, 4096, 2048};
  const int64_t m = s.w * s.m_per_chunk;
  DeviceBuffer a(size_t(m * s.k * 2)), b(size_t(s.k * s.n * 2)), c(size_t(m * s.n * 2));
  fill(a.p, m, s.k, false, 1);
  fill(b.p, s.k, s.n, false, 2);
  uint32_t* flags_host = nullptr;
  uint32_t* flags_dev = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&flags_host), sizeof(uint32_t) * s.w,
                   cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_dev), flags_host, 0));
  uint32_t* err_dev = nullptr;
  CK(cudaMalloc(&err_dev, 12));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const uint64_t timeout_ns = 50'000'000ull;
  std::printf("%-30s %5s %8s %10s %-14s %s\n", "config", "pivot", "missing", "kernel_ms",
              "error words", "message");
  int done = 0;
  for (const Variant& v : variants) {
    if (v.inst->b_col_major || v.config.swizzle != 1) continue;
    const int missing = done % 2 ? 0 : 5;  // the pivot chunk itself, or a later one
    const int pivot = done % 2 ? 0 : 2;
    ++done;
    const uint32_t epoch = 77;
    for (int i = 0; i < s.w; ++i) flags_host[i] = i == missing ? epoch - 1 : epoch;
    CK(cudaMemset(err_dev, 0, 12));
    NativeGemmArgs args = make_args(a.p, b.p, false, c.p, s.w, s.m_per_chunk, s.n, s.k, pivot,
                                    flags_dev, epoch, err_dev, timeout_ns);
    CK(cudaEventRecord(e0));
    if (!launch_checked(v, args, nullptr, v.name + " timeout")) continue;
    CK(cudaEventRecord(e1));
    wait_or_die(e1, 20000, v.name + " timeout");
    float kernel_ms = 0;
    CK(cudaEventElapsedTime(&kernel_ms, e0, e1));
    uint32_t err[3];
    CK(cudaMemcpy(err, err_dev, 12, cudaMemcpyDeviceToHost));
    const std::string msg = nat::native_gemm_error_message(err, timeout_ns);
    std::printf("%-30s %5d %8d %10.2f %4u/%4u/%4u  %s\n", v.name.c_str(), pivot, missing,
                kernel_ms, err[0], err[1], err[2], msg.c_str());
    if (err[0] != uint32_t(missing + 1) || err[1] != epoch - 1 || err[2] != epoch)
      fail(v.name + " timeout: error words do not name chunk " + std::to_string(missing));
    if (kernel_ms < 50.0 || kernel_ms > 2000.0)
      fail(v.name + " timeout: kernel time " + std::to_string(kernel_ms) + " ms not in [50, 2000]");
  }
  CK(cudaFreeHost(flags_host));
  CK(cudaFree(err_dev));
}

// ------------------------------------------------------------------ speed
struct SpeedRow {
  int64_t m, n, k;
  bool bcol;
  std::string variant;
  int group, grid;
  double ms, tflops, ratio, rel_vs_cublas;
};

// "MxNxK,MxNxK,...": the shapes --shapes asks for (the cost table's grid).
std::vector<std::array<int64_t, 3>> g_shapes;

// The reduce-scatter call's surroundings, to time its GEMM as the loopback
// call runs it (each off by default): the grid on all but g_free_sms SMs
// (the arrival model keeps one), a one-thread poller on another stream that
// waits for each chunk's release as the model does (with --poll-gbps, also
// as the model then spins the chunk's transfer time and releases a word at
// system scope), and the W - 1 library GEMMs that place the peers' partials
// right before the grid (untimed).
int g_free_sms = 0;
bool g_poll = false;
double g_poll_gbps = 0;
bool g_placement = false;
int g_chunks = 8;

// One thread: waits for flags[0..w) to hold epoch in order (each at most
// timeout_ns of the global timer), as the arrival model polls the chunks;
// after each, where transfer_ns > 0, spins that long (sleeping 64 ns
// between reads of the timer) and releases *released at system scope, as
// the model does for each slot. The kernel's own acquire, release and
// timer (kernel/chunk_gate.cuh, kernel/chunk_signal.cuh).
__global__ void poll_releases(const uint32_t* flags, int w, uint32_t epoch, uint64_t timeout_ns,
                              uint64_t transfer_ns, uint32_t* released) {
  namespace k = nat::kernel;
  for (int i = 0; i < w; ++i) {
    const uint64_t t0 = k::globaltimer_ns();
    while (k::ld_acquire_sys(flags + i) != epoch) {
      if (k::globaltimer_ns() - t0 > timeout_ns) return;
      __nanosleep(64);
    }
    if (transfer_ns == 0) continue;
    const uint64_t until = k::globaltimer_ns() + transfer_ns;
    while (k::globaltimer_ns() < until) __nanosleep(64);
    k::st_release_sys(released, epoch);
  }
}

std::vector<SpeedRow> speed(const std::vector<Variant>& variants, LtGemm& lt, int reps,
                            bool quick, const std::vector<bool>& layouts) {
  std::printf("\n== speed: every chunk ready (flags preset in device memory), W = 8, "
              "median of %d reps after 3 warm-ups, round-robin over variants and layouts, "
              "rotating input sets\n", reps);
  struct S { int64_t m, n, k; };
  std::vector<S> shapes = {{8192, 8192, 8192}};
  for (int64_t m : {4096, 8192, 16384, 32768})
    for (auto nk : {std::pair<int64_t, int64_t>{1280, 8192}, {7168, 8192}, {8192, 3584},
                    {8192, 28672}})
      shapes.push_back({m, nk.first, nk.second});
  if (quick) shapes.resize(3);
  if (!g_shapes.empty()) {
    shapes.clear();
    for (const auto& s : g_shapes) shapes.push_back({s[0], s[1], s[2]});
  }
  int device = 0, l2 = 0;
  CK(cudaGetDevice(&device));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const int w = g_chunks;
  ReadyFlags ready(w);
  std::vector<SpeedRow> rows;
  cudaStream_t st, poll_stream;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&poll_stream, cudaStreamNonBlocking));
  int sm_count = 0;
  CK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  const int max_sms = g_free_sms > 0 ? sm_count - g_free_sms : 0;
  for (const S& s : shapes) {
    const size_t a_b = size_t(s.m * s.k * 2), b_b = size_t(s.k * s.n * 2), c_b = size_t(s.m * s.n * 2);
    const size_t set_bytes = a_b + b_b + c_b;
    const int nsets = int(std::min<size_t>(8, std::max<size_t>(2, (3 * size_t(l2)) / set_bytes + 1)));
    std::vector<std::unique_ptr<DeviceBuffer>> A, B[2], C;
    for (int i = 0; i < nsets; ++i) {
      A.emplace_back(new DeviceBuffer(a_b));
      C.emplace_back(new DeviceBuffer(c_b));
      fill(A.back()->p, s.m, s.k, false, 1000 + i);
      for (bool bcol : layouts) {
        B[bcol].emplace_back(new DeviceBuffer(b_b));
        fill(B[bcol].back()->p, s.k, s.n, bcol, 2000 + i);
      }
    }
    DeviceBuffer c_lt(c_b), c_chk(c_b);
    // The placed peers' partials: W - 1 chunks of m / W rows.
    std::unique_ptr<DeviceBuffer> placed;
    if (g_placement) placed.reset(new DeviceBuffer(c_b));

    // The runs: cuBLASLt per layout, then one per distinct (kernel, clamped
    // group), then the config choose_native_gemm_config picks ("auto").
    struct Run { const Variant* v; bool bcol; bool is_auto; int group; int grid; std::vector<float> ms; };
    std::vector<Run> runs;
    for (bool bcol : layouts) {
      runs.push_back({nullptr, bcol, false, 0, 0, {}});
      for (const Variant& v : variants) {
        if (v.inst->b_col_major != bcol) continue;
        NativeGemmArgs args = for_side(v, make_args(A[0]->p, B[bcol][0]->p, bcol, C[0]->p, w,
                                                    s.m / w, s.n, s.k, 0, ready.flags,
                                                    ready.epoch, ready.err, 2'000'000'000ull,
                                                    max_sms),
                                       ready);
        if (!nat::can_implement(v.config, args)) continue;
        const int64_t clusters_per_chunk = (s.m / w) / v.config.m_granularity;
        int g = v.config.swizzle;
        while (g > 1 && clusters_per_chunk % g) --g;
        bool dup = false;
        for (const Run& r : runs)
          if (r.v && r.v->inst == v.inst && r.group == g) dup = true;
        if (dup) continue;
        runs.push_back({&v, bcol, false, g, nat::grid_size(v.config, args), {}});
      }
      NativeGemmArgs args = make_args(A[0]->p, B[bcol][0]->p, bcol, C[0]->p, w, s.m / w, s.n, s.k,
                                      0, ready.flags, ready.epoch, ready.err);
      if (const NativeGemmConfig* chosen = nat::choose_native_gemm_config(args)) {
        static std::deque<Variant> autos;
        const nat::detail::InstanceInfo* inst = nullptr;
        for (auto* i : all_instances())
          if (i->b_col_major == bcol && i->schedule == chosen->schedule &&
              i->tile_m == chosen->tile_m && i->tile_n == chosen->tile_n &&
              i->cluster_m == chosen->cluster_m && i->cluster_n == chosen->cluster_n)
            inst = i;
        if (inst) {
          autos.push_back(make_variant(inst, chosen->swizzle));
          autos.back().name = std::string("auto:") + chosen->name;
          runs.push_back({&autos.back(), bcol, true, chosen->swizzle,
                          nat::grid_size(*chosen, args), {}});
        }
      }
    }
    std::vector<cudaEvent_t> ev(2 * runs.size());
    for (auto& e : ev) CK(cudaEventCreate(&e));
    for (int rep = 0; rep < 3 + reps; ++rep) {
      const int set = rep % nsets;
      for (size_t ri = 0; ri < runs.size(); ++ri) {
        Run& r = runs[ri];
        const bool releases = r.v && r.v->config.sync == nat::ChunkSync::release_output;
        if (releases && placed) {
          const int64_t m = s.m / w;
          for (int slot = 0; slot + 1 < w; ++slot) {
            lt.run(static_cast<const char*>(A[set]->p) + size_t(slot * m * s.k) * 2,
                   B[r.bcol][set]->p, r.bcol,
                   static_cast<char*>(placed->p) + size_t(slot * m * s.n) * 2, m, s.n, s.k, st);
          }
        }
        CK(cudaEventRecord(ev[2 * ri], st));
        if (!r.v) {
          lt.run(A[set]->p, B[r.bcol][set]->p, r.bcol, C[set]->p, s.m, s.n, s.k, st);
        } else {
          // A releasing run's epoch changes every launch, so that the poller
          // waits for this launch's releases (the gate's stays 1: its flags
          // are preset).
          NativeGemmArgs args = for_side(*r.v, make_args(A[set]->p, B[r.bcol][set]->p, r.bcol,
                                                         C[set]->p, w, s.m / w, s.n, s.k, rep % w,
                                                         ready.flags, ready.epoch, ready.err,
                                                         2'000'000'000ull, max_sms),
                                         ready);
          if (releases) args.epoch = 100u + uint32_t(rep * runs.size() + ri);
          const cudaError_t e = nat::launch(r.v->config, args, nullptr, st);
          if (e != cudaSuccess) {
            fail(r.v->name + " speed launch: " + cudaGetErrorString(e));
            _exit(2);
          }
          if (releases && g_poll) {
            // The chunk's bytes (m / W x n, bf16) at g_poll_gbps: bytes / (GB/s) = ns.
            const uint64_t transfer_ns =
                g_poll_gbps > 0 ? uint64_t(double(s.m / w * s.n * 2) / g_poll_gbps) : 0;
            poll_releases<<<1, 1, 0, poll_stream>>>(ready.done_flags, w, args.epoch,
                                                    100'000'000ull, transfer_ns, ready.released);
            CK(cudaGetLastError());
          }
        }
        CK(cudaEventRecord(ev[2 * ri + 1], st));
      }
      CK(cudaStreamSynchronize(st));
      CK(cudaStreamSynchronize(poll_stream));
      if (rep >= 3) {
        for (size_t ri = 0; ri < runs.size(); ++ri) {
          float t = 0;
          CK(cudaEventElapsedTime(&t, ev[2 * ri], ev[2 * ri + 1]));
          runs[ri].ms.push_back(t);
        }
      }
    }
    for (auto& e : ev) CK(cudaEventDestroy(e));
    const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
    auto median = [](std::vector<float> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? double(v[v.size() / 2])
                          : 0.5 * (double(v[v.size() / 2 - 1]) + double(v[v.size() / 2]));
    };
    std::printf("\n# M=%ld N=%ld K=%ld  (%d input sets of %.0f MB, L2 %d MB)\n", long(s.m),
                long(s.n), long(s.k), nsets, set_bytes / 1e6, l2 >> 20);
    std::printf("  %-40s %-3s %5s %5s %9s %9s %7s %10s\n", "variant", "B", "group", "grid", "ms",
                "TFLOP/s", "ratio", "rel_err");
    for (bool bcol : layouts) {
      double lt_ms = 0;
      for (const Run& r : runs)
        if (!r.v && r.bcol == bcol) lt_ms = median(r.ms);
      // cuBLASLt reference output on set 0 for the checks below
      poison(c_lt.p, c_b, st);
      lt.run(A[0]->p, B[bcol][0]->p, bcol, c_lt.p, s.m, s.n, s.k, st);
      CK(cudaStreamSynchronize(st));
      for (const Run& r : runs) {
        if (r.bcol != bcol) continue;
        SpeedRow row{s.m, s.n, s.k, bcol, r.v ? r.v->name : "cublasLt", r.group, r.grid,
                     median(r.ms), 0, 0, 0};
        row.tflops = flop / (row.ms * 1e-3) / 1e12;
        row.ratio = lt_ms / row.ms;
        if (r.v) {  // every variant's output checked against cuBLASLt on set 0
          NativeGemmArgs args = for_side(*r.v, make_args(A[0]->p, B[bcol][0]->p, bcol, c_chk.p,
                                                         w, s.m / w, s.n, s.k, 3, ready.flags,
                                                         ready.epoch, ready.err),
                                         ready);
          poison(c_chk.p, c_b, st);
          CK(nat::launch(r.v->config, args, nullptr, st));
          CK(cudaStreamSynchronize(st));
          const Compared cmp = compare_device(c_chk.p, c_lt.p, s.m * s.n);
          row.rel_vs_cublas = cmp.nans ? INFINITY : cmp.rel;
          if (!(row.rel_vs_cublas < 1e-2)) fail(row.variant + " speed run: wrong result");
        }
        std::printf("  %-40s %-3s %5d %5d %9.3f %9.1f %7.3f %10.2e\n", row.variant.c_str(),
                    bcol ? "col" : "row", row.group, row.grid, row.ms, row.tflops, row.ratio,
                    row.rel_vs_cublas);
        rows.push_back(row);
      }
    }
    std::fflush(stdout);
  }
  CK(cudaStreamDestroy(st));
  CK(cudaStreamDestroy(poll_stream));
  return rows;
}

void write_json(const std::string& path, const std::vector<SpeedRow>& rows) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    fail("cannot write " + path);
    return;
  }
  std::fprintf(f, "{\"failures\": %d, \"speed\": [\n", g_failures);
  for (size_t i = 0; i < rows.size(); ++i) {
    const SpeedRow& r = rows[i];
    std::fprintf(f,
                 "  {\"m\": %ld, \"n\": %ld, \"k\": %ld, \"b\": \"%s\", \"variant\": \"%s\", \"group\": %d, "
                 "\"grid\": %d, \"ms\": %.6f, \"tflops\": %.2f, \"ratio\": %.4f, \"rel\": %.3e}%s\n",
                 long(r.m), long(r.n), long(r.k), r.bcol ? "col" : "row", r.variant.c_str(), r.group, r.grid, r.ms,
                 r.tflops, r.ratio, std::isfinite(r.rel_vs_cublas) ? r.rel_vs_cublas : 1.0,
                 i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

void summary(const std::vector<SpeedRow>& rows) {
  if (rows.empty()) return;
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  for (bool bcol : {false, true}) {
    std::vector<double> best_ratios, auto_ratios;
    std::map<std::string, std::vector<double>> per_variant;
    bool header = false;
    for (size_t i = 0; i < rows.size();) {
      size_t j = i;
      const SpeedRow* best = nullptr;
      const SpeedRow* chosen = nullptr;
      double lt_tflops = 0;
      for (; j < rows.size() && rows[j].m == rows[i].m && rows[j].n == rows[i].n &&
             rows[j].k == rows[i].k;
           ++j) {
        if (rows[j].bcol != bcol) continue;
        if (rows[j].variant == "cublasLt") {
          lt_tflops = rows[j].tflops;
        } else if (rows[j].variant.rfind("auto:", 0) == 0) {
          chosen = &rows[j];
        } else {
          per_variant[rows[j].variant].push_back(rows[j].ratio);
          if (!best || rows[j].ratio > best->ratio) best = &rows[j];
        }
      }
      if (best) {
        if (!header) {
          std::printf("\n== summary, B %s-major: best native variant and the auto choice per shape vs cuBLASLt (same run)\n",
                      bcol ? "column" : "row");
          std::printf("%-18s %-26s %8s %7s | %-34s %8s %7s | %8s\n", "M x N x K", "best variant",
                      "TFLOP/s", "ratio", "auto choice", "TFLOP/s", "ratio", "cuBLASLt");
          header = true;
        }
        char shape[40];
        std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", long(best->m), long(best->n), long(best->k));
        std::printf("%-18s %-26s %8.1f %7.3f | %-34s %8.1f %7.3f | %8.1f\n", shape,
                    best->variant.c_str(), best->tflops, best->ratio,
                    chosen ? chosen->variant.c_str() : "-", chosen ? chosen->tflops : 0.0,
                    chosen ? chosen->ratio : 0.0, lt_tflops);
        best_ratios.push_back(best->ratio);
        if (chosen) auto_ratios.push_back(chosen->ratio);
      }
      i = j;
    }
    if (best_ratios.empty()) continue;
    std::printf("B %s: best-per-shape ratio median %.3f, min %.3f; auto choice median %.3f, min %.3f "
                "(%zu shapes; target median >= 0.97, none < 0.90)\n",
                bcol ? "col" : "row", med(best_ratios),
                *std::min_element(best_ratios.begin(), best_ratios.end()),
                auto_ratios.empty() ? 0.0 : med(auto_ratios),
                auto_ratios.empty() ? 0.0 : *std::min_element(auto_ratios.begin(), auto_ratios.end()),
                best_ratios.size());
    std::printf("single variant across shapes, B %s (median / min ratio, shapes run):\n",
                bcol ? "col" : "row");
    for (auto& [name, v] : per_variant)
      std::printf("  %-28s %.3f / %.3f  (%zu)\n", name.c_str(), med(v),
                  *std::min_element(v.begin(), v.end()), v.size());
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = s.find(',', p);
    const std::string item = s.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (!item.empty()) out.push_back(item);
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool tests = false, run_speed = false, quick = false;
  int reps = 25;
  std::string json, kernels_filter, swizzles = "1,2,4,8", layouts_arg = "row,col";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--tests") tests = true;
    else if (a == "--speed") run_speed = true;
    else if (a == "--quick") quick = true;
    else if (a == "--json") json = next();
    else if (a == "--reps") reps = std::max(20, std::atoi(next().c_str()));
    else if (a == "--kernels") kernels_filter = next();
    else if (a == "--swizzles") swizzles = next();
    else if (a == "--layouts") layouts_arg = next();
    else if (a == "--free-sms") g_free_sms = std::max(0, std::atoi(next().c_str()));
    else if (a == "--poll") g_poll = true;
    else if (a == "--poll-gbps") g_poll_gbps = std::atof(next().c_str());
    else if (a == "--placement") g_placement = true;
    else if (a == "--chunks") g_chunks = std::max(1, std::atoi(next().c_str()));
    else if (a == "--shapes") {
      for (const auto& s : split(next())) {
        long m = 0, n = 0, k = 0;
        if (std::sscanf(s.c_str(), "%ldx%ldx%ld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) {
          std::fprintf(stderr, "--shapes: '%s' is not MxNxK\n", s.c_str());
          return 2;
        }
        g_shapes.push_back({m, n, k});
      }
    } else {
      std::fprintf(stderr, "usage: %s [--tests] [--speed] [--json FILE] [--reps N] [--kernels id,..] [--swizzles 1,2,..] [--layouts row,col] [--shapes MxNxK,..] [--quick] [--free-sms N] [--poll] [--poll-gbps G] [--placement] [--chunks N]\n", argv[0]);
      return 2;
    }
  }
  if (!tests && !run_speed) tests = run_speed = true;

  int device = 0, rt = 0, drv = 0;
  CK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, device));
  CK(cudaRuntimeGetVersion(&rt));
  CK(cudaDriverGetVersion(&drv));
  std::printf("# native_kernel_bench: %s, sm_%d%d, %d SMs, L2 %d MB, runtime %d, driver %d\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20,
              rt, drv);
  std::printf("# instances: %-28s %-5s %6s %7s %9s %s\n", "id", "sched", "stages", "smem_KB",
              "m_gran", "B");
  const auto filter = split(kernels_filter);
  std::vector<const nat::detail::InstanceInfo*> insts;
  std::vector<const nat::detail::InstanceInfo*> listed = all_instances();
  for (auto* i : output_instances()) listed.push_back(i);
  for (auto* i : listed) {
    if (!filter.empty() && std::find(filter.begin(), filter.end(), i->id) == filter.end()) continue;
    insts.push_back(i);
    std::printf("#            %-28s %-5s %6d %7d %9d %s\n", i->id,
                i->schedule == nat::KernelSchedule::kCooperative ? "coop" : "pp", i->stages,
                i->smem_bytes / 1024, i->tile_m * i->cluster_m, i->b_col_major ? "col" : "row");
  }
  std::printf("# library configs:");
  for (const auto& c : nat::native_gemm_configs()) std::printf(" %s", c.name);
  std::printf("\n");

  LtGemm lt;
  std::vector<Variant> base;  // swizzle 1 of every instance, for the tests
  for (auto* i : insts)
    if (!releases_output(i)) base.push_back(make_variant(i, 1));
  if (tests) {
    std::vector<Variant> with_swizzle = base;
    for (auto* i : insts)
      if (!i->b_col_major && !releases_output(i)) with_swizzle.push_back(make_variant(i, 4));
    correctness(with_swizzle, lt, quick);
    gating(base);
    timeout_path(base);
  }
  std::vector<SpeedRow> rows;
  if (run_speed) {
    std::vector<Variant> variants;
    for (auto* i : insts)
      for (const auto& sw : split(swizzles)) variants.push_back(make_variant(i, std::atoi(sw.c_str())));
    std::vector<bool> layouts;
    for (const auto& l : split(layouts_arg)) layouts.push_back(l == "col");
    rows = speed(variants, lt, reps, quick, layouts);
  }
  if (!json.empty()) write_json(json, rows);
  summary(rows);
  std::printf("\n%s: %d failure(s)\n", g_failures ? "FAILED" : "OK", g_failures);
  return g_failures ? 1 : 0;
}
