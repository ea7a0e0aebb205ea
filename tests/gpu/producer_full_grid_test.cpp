// The producer beside a full persistent grid (DESIGN.md, Backends and
// Signals, Deadlock rules). The native kernel runs with
// max_sms = every SM of the device, so no SM is left for anything else; the
// producer (the loopback transport's PCIe link model) moves each chunk of A
// from pinned host memory with cudaMemcpyAsync (copy engines) and releases
// the chunk's flag with cuStreamWriteValue32 (a stream memory operation,
// ordered after the copy by default). Neither needs an SM, so the grid can
// wait on them without deadlock. The kernel's bounded wait turns a would-be
// deadlock into a reported timeout, and every host wait here is bounded too
// (wait_stream_bounded aborts the process past its limit), so no test hangs.
//
//   ProducerCopyEngine.FullGridEpochs        20 calls, epoch advancing, flags never reset
//   ProducerCopyEngine.GraphReplay           the whole op in a CUDA graph, 100 replays
//   ProducerMaxConnections.*                 CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware
//                                            queue): producer enqueued before the kernel
//                                            (must be correct) / after it, also with other
//                                            gemm-stream work in between (outcome
//                                            recorded); skipped unless the variable is set
//                                            (scripts/device/cuda-backend.sh, step max-connections, sets it)
//   ProducerNegativeControl.DeviceToDeviceBesideFullGrid
//                                            a same-GPU D2D copy as the producer (a copy
//                                            kernel on SMs) beside each config's full
//                                            grid: the known hazard, outcome reported,
//                                            always bounded
//
// The driver API is not linked (the binary must load where there is no
// driver): cuStreamWriteValue32 comes from cudaGetDriverEntryPointByVersion
// at run time; <cuda.h> is included for its types only.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "async_input_gemm.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/graph_nodes.hpp"
#include "support/seed.hpp"

namespace {

namespace nat = asynctp::cuda::native;
using asynctp_test::Seed;
using namespace asynctp_test::gpu;

constexpr int kWorld = 8;
constexpr std::int64_t kK = 1024;
constexpr double kHostLimitS = 30.0;  // host-side bound on any one wait

// ---------------------------------------------------------------------------
// cuStreamWriteValue32, looked up at run time.

using WriteValue32Fn = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// nullptr (and *why set) when the driver does not provide it.
WriteValue32Fn write_value32(std::string* why) {
  static std::string error;
  static const WriteValue32Fn fn = []() -> WriteValue32Fn {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    // 12000: the CUDA 12 ABI of the symbol (cuStreamWriteValue32_v2).
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
      error = std::string("cudaGetDriverEntryPointByVersion(cuStreamWriteValue32): ") +
              cudaGetErrorName(e) + ", query result " + std::to_string(static_cast<int>(q));
      (void)cudaGetLastError();
      return nullptr;
    }
    WriteValue32Fn f = nullptr;
    static_assert(sizeof f == sizeof p, "function and object pointers differ in size");
    std::memcpy(&f, &p, sizeof f);
    return f;
  }();
  if (!fn && why) *why = error;
  return fn;
}

// ---------------------------------------------------------------------------
// One full-grid case: problem, device buffers, pinned host copy of A, device
// flags, two non-blocking streams.

struct FullGridCase {
  const nat::NativeGemmConfig* config = nullptr;
  std::int64_t m_per_chunk = 0, n = 0;
  bool b_col_major = false;
  int sms = 0, grid = 0;
  std::unique_ptr<HostProblem> hp;
  DeviceProblem dp;
  PinnedBuffer a_host;        // the chunks' source (pinned host memory: copy engines)
  DeviceBuffer a_device_src;  // the same data on the device (negative control only)
  DeviceBuffer flags;         // kWorld uint32 in device memory
  Stream gemm, prod;

  std::uint32_t* flag_ptr() const { return flags.as<std::uint32_t>(); }
};

// Picks the config choose_native_gemm_config favours for W = 8, m_per_chunk
// = 2 * its m granularity, n = 1024, k = 1024 (n doubled while there are
// fewer tiles than SMs), and asks for a grid of every SM (max_sms = SM count).
void pick_shape(FullGridCase& fc, const nat::NativeGemmConfig* forced) {
  fc.sms = sm_count();
  ASSERT_GT(fc.sms, 0);
  int max_granularity = 1;
  for (const nat::NativeGemmConfig& c : nat::native_gemm_configs()) {
    max_granularity = std::max(max_granularity, c.m_granularity);
  }
  DeviceBuffer dummy;  // 16-byte aligned stand-ins for the shape query
  CUDA_ASSERT(dummy.alloc(256));
  for (std::int64_t n = 1024; n <= 8192; n *= 2) {
    nat::NativeGemmArgs probe;
    probe.a = probe.b = probe.c = dummy.p;
    probe.chunk_flags = dummy.as<std::uint32_t>();
    probe.error_words = dummy.as<std::uint32_t>() + 16;
    probe.timeout_ns = 1;
    probe.world_size = kWorld;
    probe.k = kK;
    probe.n = n;
    probe.max_sms = fc.sms;
    probe.m_per_chunk = 2 * max_granularity;
    const nat::NativeGemmConfig* c = forced ? forced : nat::choose_native_gemm_config(probe);
    if (!c) {
      probe.b_col_major = true;
      c = nat::choose_native_gemm_config(probe);
    }
    ASSERT_NE(nullptr, c) << "no native config for W 8, n " << n << ", k " << kK;
    probe.m_per_chunk = 2 * c->m_granularity;
    const nat::NativeGemmConfig* again = forced ? forced : nat::choose_native_gemm_config(probe);
    if (again) c = again;
    probe.m_per_chunk = 2 * c->m_granularity;
    probe.b_col_major = !c->has_b_row_major;
    std::string reason;
    ASSERT_TRUE(nat::can_implement(*c, probe, &reason)) << c->name << ": " << reason;
    fc.config = c;
    fc.m_per_chunk = probe.m_per_chunk;
    fc.n = n;
    fc.b_col_major = probe.b_col_major;
    fc.grid = nat::grid_size(*c, probe);
    if (fc.grid >= fc.sms) break;
    // Enough tiles for every SM, yet a smaller grid: the occupancy (cluster)
    // limit, not n, bounds it; a larger n would not fill more SMs.
    const std::int64_t tiles =
        kWorld * probe.m_per_chunk / c->tile_m * ((n + c->tile_n - 1) / c->tile_n);
    if (tiles >= fc.sms) break;
  }
  std::printf("  config %s, W %d, m_per_chunk %lld, n %lld, k %lld: grid %d CTAs on %d SMs%s\n",
              fc.config->name, kWorld, static_cast<long long>(fc.m_per_chunk),
              static_cast<long long>(fc.n), static_cast<long long>(kK), fc.grid, fc.sms,
              fc.grid >= fc.sms ? " (full)" : " (NOT full: the occupancy limit leaves SMs free)");
}

// Fresh random inputs: the host problem and the pinned copy of A (B uploaded).
void fresh_inputs(FullGridCase& fc, std::mt19937_64& rng, bool first) {
  fc.hp = std::make_unique<HostProblem>(kWorld, fc.m_per_chunk, fc.n, kK, fc.b_col_major, rng);
  if (first) {
    ASSERT_NO_FATAL_FAILURE(upload(*fc.hp, fc.dp, /*a_poisoned=*/true));
    CUDA_ASSERT(fc.a_host.alloc(fc.hp->a_bytes(), cudaHostAllocDefault));
  } else {
    CUDA_ASSERT(cudaDeviceSynchronize());
    CUDA_ASSERT(cudaMemcpy(fc.dp.b.p, fc.hp->b.data(), fc.hp->b.bytes(), cudaMemcpyHostToDevice));
  }
  std::memcpy(fc.a_host.p, fc.hp->a.data(), fc.hp->a_bytes());
  if (fc.a_device_src.p) {
    CUDA_ASSERT(
        cudaMemcpy(fc.a_device_src.p, fc.hp->a.data(), fc.hp->a_bytes(), cudaMemcpyHostToDevice));
  }
}

void setup(FullGridCase& fc, std::mt19937_64& rng, std::uint32_t stale_flag,
           bool device_source = false, const nat::NativeGemmConfig* forced = nullptr) {
  ASSERT_NO_FATAL_FAILURE(pick_shape(fc, forced));
  if (device_source) {
    CUDA_ASSERT(fc.a_device_src.alloc(static_cast<std::size_t>(kWorld * fc.m_per_chunk * kK) *
                                      sizeof(std::uint16_t)));
  }
  ASSERT_NO_FATAL_FAILURE(fresh_inputs(fc, rng, true));
  CUDA_ASSERT(fc.flags.alloc(kWorld * sizeof(std::uint32_t)));
  const std::vector<std::uint32_t> stale(kWorld, stale_flag);
  CUDA_ASSERT(
      cudaMemcpy(fc.flags.p, stale.data(), kWorld * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  CUDA_ASSERT(fc.gemm.create());
  CUDA_ASSERT(fc.prod.create());
  CUDA_ASSERT(cudaDeviceSynchronize());
}

// Poisons A (NaN: a chunk read before its copy shows) and C, zeroes the
// error words; done and finished before the next call is enqueued.
void reset_buffers(FullGridCase& fc) {
  CUDA_ASSERT(cudaMemsetAsync(fc.dp.a.p, 0xFF, fc.hp->a_bytes(), fc.gemm.s));
  CUDA_ASSERT(
      cudaMemsetAsync(fc.dp.c.p, 0xFF, fc.hp->c_bytes(), fc.gemm.s));  // core::poison's 0xFFFF
  CUDA_ASSERT(cudaMemsetAsync(fc.dp.err.p, 0, 3 * sizeof(std::uint32_t), fc.gemm.s));
  CUDA_ASSERT(wait_stream_bounded(fc.gemm.s, kHostLimitS, "reset"));
}

std::vector<int> pivot_order(int pivot) {
  std::vector<int> order;
  for (int i = 0; i < kWorld; ++i) order.push_back((pivot + i) % kWorld);
  return order;
}

enum class Source { pinned_host, device };

// The producer: for each chunk in `order`, copy it into A, then write the
// chunk's flag = epoch (CU_STREAM_WRITE_VALUE_DEFAULT: ordered after the
// copy, with a memory fence), all on `stream`.
void enqueue_producer(FullGridCase& fc, const std::vector<int>& order, std::uint32_t epoch,
                      cudaStream_t stream, Source source) {
  std::string why;
  const WriteValue32Fn write = write_value32(&why);
  ASSERT_NE(nullptr, write) << why;
  const std::size_t chunk_bytes = fc.hp->chunk_bytes();
  for (int chunk : order) {
    const std::size_t offset = static_cast<std::size_t>(chunk) * chunk_bytes;
    const void* src = source == Source::pinned_host
                          ? static_cast<const char*>(fc.a_host.p) + offset
                          : static_cast<const char*>(fc.a_device_src.p) + offset;
    CUDA_ASSERT(cudaMemcpyAsync(
        static_cast<char*>(fc.dp.a.p) + offset, src, chunk_bytes,
        source == Source::pinned_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, stream));
    const CUresult r =
        write(reinterpret_cast<CUstream>(stream),
              static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(fc.flag_ptr() + chunk)),
              epoch, CU_STREAM_WRITE_VALUE_DEFAULT);
    ASSERT_EQ(CUDA_SUCCESS, r) << "cuStreamWriteValue32 for chunk " << chunk << ": CUresult "
                               << static_cast<int>(r);
  }
}

nat::NativeGemmArgs full_grid_args(const FullGridCase& fc, int pivot, std::uint32_t epoch,
                                   std::uint64_t timeout_ns) {
  return make_args(*fc.hp, fc.dp, pivot, fc.flag_ptr(), epoch, timeout_ns, fc.sms);
}

std::array<std::uint32_t, 3> read_error_words(const FullGridCase& fc) {
  std::array<std::uint32_t, 3> err{1, 1, 1};
  EXPECT_EQ(cudaSuccess,
            cudaMemcpy(err.data(), fc.dp.err.p, sizeof(std::uint32_t) * 3, cudaMemcpyDeviceToHost));
  return err;
}

std::uint64_t checksum_c(const FullGridCase& fc, std::vector<unsigned char>& scratch) {
  scratch.resize(fc.hp->c_bytes());
  EXPECT_EQ(cudaSuccess,
            cudaMemcpy(scratch.data(), fc.dp.c.p, scratch.size(), cudaMemcpyDeviceToHost));
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char b : scratch) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// One call: the kernel launched on the gemm stream and the producer enqueued
// before or after it; both streams waited on with a bound. *out gets the
// error words, the host time from the first enqueue until both streams were
// seen done, and the kernel's time by events on the gemm stream.
struct CallResult {
  std::array<std::uint32_t, 3> err{};
  double host_ms = 0;
  float kernel_ms = 0;
};

// What the gemm stream gets between the kernel launch and the producer's
// enqueue (producer after the kernel only): nothing, an event record, or a
// memset (a kernel on SMs) of scratch memory, i.e. the caller's next work.
enum class Between { nothing, event_record, memset };

void run_call(FullGridCase& fc, int pivot, std::uint32_t epoch, std::uint64_t timeout_ns,
              bool producer_first, Source source, const std::string& what, CallResult* out,
              Between between = Between::nothing) {
  ASSERT_NO_FATAL_FAILURE(reset_buffers(fc));
  const nat::NativeGemmArgs args = full_grid_args(fc, pivot, epoch, timeout_ns);
  std::string reason;
  ASSERT_TRUE(nat::can_implement(*fc.config, args, &reason)) << reason;
  Event e0, e1;
  CUDA_ASSERT(e0.create());
  CUDA_ASSERT(e1.create());
  const std::vector<int> order = pivot_order(pivot);
  Event mid;
  DeviceBuffer scratch;
  if (between == Between::event_record) CUDA_ASSERT(mid.create());
  if (between == Between::memset) CUDA_ASSERT(scratch.alloc(1 << 20));

  const auto t0 = Clock::now();
  if (producer_first) {
    ASSERT_NO_FATAL_FAILURE(enqueue_producer(fc, order, epoch, fc.prod.s, source));
  }
  CUDA_ASSERT(cudaEventRecord(e0.e, fc.gemm.s));
  CUDA_ASSERT(nat::launch(*fc.config, args, nullptr, fc.gemm.s));
  if (between == Between::event_record) {
    CUDA_ASSERT(cudaEventRecord(mid.e, fc.gemm.s));
  } else if (between == Between::memset) {
    CUDA_ASSERT(cudaMemsetAsync(scratch.p, 0, scratch.bytes, fc.gemm.s));
  }
  if (!producer_first) {
    ASSERT_NO_FATAL_FAILURE(enqueue_producer(fc, order, epoch, fc.prod.s, source));
  }
  // Recorded last, so nothing but the producer itself follows the kernel in
  // enqueue order (with one hardware queue an event record behind the kernel
  // could hold up the producer on its own).
  CUDA_ASSERT(cudaEventRecord(e1.e, fc.gemm.s));
  Clock::time_point gemm_done, prod_done;
  const cudaError_t ks =
      wait_stream_bounded(fc.gemm.s, kHostLimitS, what + " (kernel)", &gemm_done);
  const cudaError_t ps =
      wait_stream_bounded(fc.prod.s, kHostLimitS, what + " (producer)", &prod_done);
  CUDA_ASSERT(ks);
  CUDA_ASSERT(ps);
  CUDA_ASSERT(cudaGetLastError());
  out->host_ms = ms_between(t0, std::max(gemm_done, prod_done));
  CUDA_ASSERT(cudaEventElapsedTime(&out->kernel_ms, e0.e, e1.e));
  out->err = read_error_words(fc);
}

std::string describe(const FullGridCase& fc) {
  return std::string(fc.config->name) + " grid " + std::to_string(fc.grid) + "/" +
         std::to_string(fc.sms) + " SMs";
}

std::uint32_t first_epoch(std::mt19937_64& rng) {
  // Nonzero, room to advance without wrapping, and first - 1 (the stale
  // value) nonzero.
  return 2u + static_cast<std::uint32_t>(rng() % 0x7FFF0000u);
}

// ---------------------------------------------------------------------------
// 1. Copy engines + stream memory-op signals beside a full grid; 20 calls,
//    the epoch advancing, the flags never reset, fresh inputs every 5 calls.

TEST(ProducerCopyEngine, FullGridEpochs) {
  ASYNCTP_REQUIRE_SM90();
  const Seed seed("epochs");
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const std::uint32_t epoch0 = first_epoch(rng);
  FullGridCase fc;
  ASSERT_NO_FATAL_FAILURE(setup(fc, rng, epoch0 - 1));
  constexpr int kCalls = 20;
  constexpr std::uint64_t kTimeoutNs = 5'000'000'000ull;
  for (int i = 0; i < kCalls; ++i) {
    if (i > 0 && i % 5 == 0) {
      ASSERT_NO_FATAL_FAILURE(fresh_inputs(fc, rng, false));
    }
    const int pivot = i % kWorld;
    const std::uint32_t epoch = epoch0 + static_cast<std::uint32_t>(i);
    const std::string what = describe(fc) + " call " + std::to_string(i) + " pivot " +
                             std::to_string(pivot) + " epoch " + std::to_string(epoch);
    SCOPED_TRACE(what);
    CallResult r;
    ASSERT_NO_FATAL_FAILURE(run_call(fc, pivot, epoch, kTimeoutNs, /*producer_first=*/false,
                                     Source::pinned_host, what, &r));
    std::printf("  %-60s kernel %.3f ms, host %.3f ms\n", what.c_str(), double(r.kernel_ms),
                r.host_ms);
    ASSERT_EQ(0u, r.err[0]) << nat::native_gemm_error_message(r.err.data(), kTimeoutNs);
    ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, what));
  }
}

// ---------------------------------------------------------------------------
// 2. The same op captured in a CUDA graph and replayed 100 times.
//
// The epoch is baked into the capture, so the graph resets the flags itself,
// at its start: a cudaMemsetAsync of the flags to 0 on the gemm stream BEFORE
// the fork (and of the error words; A and C are poisoned there too, so every
// replay must copy and write everything again). A memset node may run as a
// kernel on SMs, but every other node of the graph depends on it (the kernel
// through stream order, the producer through the fork event), so it has
// finished before the persistent kernel starts: it can never sit behind the
// full grid. The producer's flag writes are mem-op nodes (no SMs), ordered
// after their copy nodes.

TEST(ProducerCopyEngine, GraphReplay) {
  ASYNCTP_REQUIRE_SM90();
  const Seed seed("graph");
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  FullGridCase fc;
  ASSERT_NO_FATAL_FAILURE(setup(fc, rng, 0));
  constexpr std::uint64_t kTimeoutNs = 5'000'000'000ull;
  const std::uint32_t epoch = first_epoch(rng);  // != 0, the value the graph resets to
  const int pivot = static_cast<int>(rng() % kWorld);
  const std::string base = describe(fc) + " pivot " + std::to_string(pivot);

  // One direct call first (checked; also warms the launch path's one-time
  // host queries, outside the capture).
  {
    CallResult r;
    ASSERT_NO_FATAL_FAILURE(
        run_call(fc, pivot, epoch, kTimeoutNs, false, Source::pinned_host, base + " direct", &r));
    ASSERT_EQ(0u, r.err[0]) << nat::native_gemm_error_message(r.err.data(), kTimeoutNs);
    ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, base + " direct"));
  }

  const nat::NativeGemmArgs args = full_grid_args(fc, pivot, epoch, kTimeoutNs);
  Event fork, join;
  CUDA_ASSERT(cudaEventCreateWithFlags(&fork.e, cudaEventDisableTiming));
  CUDA_ASSERT(cudaEventCreateWithFlags(&join.e, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  CUDA_ASSERT(cudaStreamBeginCapture(fc.gemm.s, cudaStreamCaptureModeGlobal));
  {
    // Abandons the capture if an assertion below returns early.
    struct EndGuard {
      cudaStream_t s;
      bool ended = false;
      ~EndGuard() {
        if (!ended) {
          cudaGraph_t tmp = nullptr;
          (void)cudaStreamEndCapture(s, &tmp);
          if (tmp) (void)cudaGraphDestroy(tmp);
          (void)cudaGetLastError();
        }
      }
    } guard{fc.gemm.s};
    CUDA_ASSERT(cudaMemsetAsync(fc.flags.p, 0, kWorld * sizeof(std::uint32_t), fc.gemm.s));
    CUDA_ASSERT(cudaMemsetAsync(fc.dp.err.p, 0, 3 * sizeof(std::uint32_t), fc.gemm.s));
    CUDA_ASSERT(cudaMemsetAsync(fc.dp.a.p, 0xFF, fc.hp->a_bytes(), fc.gemm.s));
    CUDA_ASSERT(cudaMemsetAsync(fc.dp.c.p, 0xFF, fc.hp->c_bytes(), fc.gemm.s));
    CUDA_ASSERT(cudaEventRecord(fork.e, fc.gemm.s));
    CUDA_ASSERT(cudaStreamWaitEvent(fc.prod.s, fork.e, 0));
    CUDA_ASSERT(nat::launch(*fc.config, args, nullptr, fc.gemm.s));
    ASSERT_NO_FATAL_FAILURE(
        enqueue_producer(fc, pivot_order(pivot), epoch, fc.prod.s, Source::pinned_host));
    CUDA_ASSERT(cudaEventRecord(join.e, fc.prod.s));
    CUDA_ASSERT(cudaStreamWaitEvent(fc.gemm.s, join.e, 0));
    guard.ended = true;
    CUDA_ASSERT(cudaStreamEndCapture(fc.gemm.s, &graph));
  }
  ASSERT_NE(nullptr, graph);
  struct GraphOwner {
    cudaGraph_t g;
    cudaGraphExec_t x = nullptr;
    ~GraphOwner() {
      if (x) (void)cudaGraphExecDestroy(x);
      (void)cudaGraphDestroy(g);
    }
  } owner{graph};
  CUDA_ASSERT(cudaGraphInstantiate(&owner.x, graph, 0));

  constexpr int kReplays = 100;
  std::vector<unsigned char> scratch;
  std::uint64_t first_sum = 0;
  double total_ms = 0, worst_ms = 0;
  for (int i = 0; i < kReplays; ++i) {
    const std::string what = base + " replay " + std::to_string(i);
    SCOPED_TRACE(what);
    const auto t0 = Clock::now();
    CUDA_ASSERT(cudaGraphLaunch(owner.x, fc.gemm.s));
    Clock::time_point done;
    CUDA_ASSERT(wait_stream_bounded(fc.gemm.s, kHostLimitS, what, &done));
    CUDA_ASSERT(cudaGetLastError());
    const double ms = ms_between(t0, done);
    total_ms += ms;
    worst_ms = std::max(worst_ms, ms);
    const auto err = read_error_words(fc);
    ASSERT_EQ(0u, err[0]) << nat::native_gemm_error_message(err.data(), kTimeoutNs);
    const std::uint64_t sum = checksum_c(fc, scratch);
    if (i == 0) first_sum = sum;
    const bool full = i == 0 || i == 1 || i == kReplays / 2 || i == kReplays - 1;
    if (full || sum != first_sum) {
      ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, what));
    }
    EXPECT_EQ(first_sum, sum) << what << ": C differs from replay 0 (checksum)";
  }
  std::printf(
      "  %d replays, C checksum %016llx every time; host time per replay: mean %.3f ms, "
      "worst %.3f ms\n",
      kReplays, static_cast<unsigned long long>(first_sum), total_ms / kReplays, worst_ms);
  // The graph's nodes, by type, after the replays.
  const asynctp_test::gpu::GraphNodeCounts nodes = asynctp_test::gpu::count_graph_nodes(graph);
  ASSERT_TRUE(nodes.ok) << "the driver did not give every node's type";
  std::printf(
      "  graph: %d nodes: %d kernel, %d memset, %d memcpy, %d mem-op (the signal writes), "
      "%d other\n",
      nodes.total, nodes.kernels, nodes.memsets, nodes.memcpys, nodes.mem_ops, nodes.others);
  EXPECT_EQ(1, nodes.kernels);
  EXPECT_EQ(kWorld, nodes.memcpys);
}

// ---------------------------------------------------------------------------
// 3. CUDA_DEVICE_MAX_CONNECTIONS=1: every stream shares one hardware queue.
//    The variable must be set before the context exists, so these tests run
//    only in a process started with it (scripts/device/cuda-backend.sh, max-connections).

bool single_connection() {
  const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return v && std::string(v) == "1";
}

#define ASYNCTP_REQUIRE_SINGLE_CONNECTION()                                                \
  do {                                                                                     \
    if (!single_connection())                                                              \
      GTEST_SKIP() << "runs only in a process started with CUDA_DEVICE_MAX_CONNECTIONS=1 " \
                      "(scripts/device/cuda-backend.sh runs it so)";                     \
  } while (0)

constexpr std::uint64_t kMaxConnTimeoutNs = 3'000'000'000ull;
constexpr int kMaxConnCalls = 3;

// (a) The producer enqueued BEFORE the kernel: it waits on nothing from the
// GEMM, so even a single queue holds no producer work behind the grid.
TEST(ProducerMaxConnections, ProducerEnqueuedBeforeKernel) {
  ASYNCTP_REQUIRE_SM90();
  ASYNCTP_REQUIRE_SINGLE_CONNECTION();
  const Seed seed("before");
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const std::uint32_t epoch0 = first_epoch(rng);
  FullGridCase fc;
  ASSERT_NO_FATAL_FAILURE(setup(fc, rng, epoch0 - 1));
  for (int i = 0; i < kMaxConnCalls; ++i) {
    const int pivot = (3 * i + 1) % kWorld;
    const std::uint32_t epoch = epoch0 + static_cast<std::uint32_t>(i);
    const std::string what = describe(fc) + " MAX_CONNECTIONS=1 producer-first call " +
                             std::to_string(i) + " pivot " + std::to_string(pivot);
    SCOPED_TRACE(what);
    CallResult r;
    ASSERT_NO_FATAL_FAILURE(run_call(fc, pivot, epoch, kMaxConnTimeoutNs, /*producer_first=*/true,
                                     Source::pinned_host, what, &r));
    std::printf("  %-60s kernel %.3f ms, host %.3f ms, error words %u/%u/%u\n", what.c_str(),
                double(r.kernel_ms), r.host_ms, r.err[0], r.err[1], r.err[2]);
    ASSERT_EQ(0u, r.err[0]) << nat::native_gemm_error_message(r.err.data(), kMaxConnTimeoutNs);
    ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, what));
  }
}

// (b) The producer enqueued AFTER the kernel launch (a side stream): with one
// hardware queue it may sit behind the grid that waits for it. Records what
// happens; asserts only that nothing hangs and nothing is silently wrong:
// either every wait succeeded and C is correct, or the kernel's bounded wait
// reported a timeout naming a chunk.
TEST(ProducerMaxConnections, ProducerEnqueuedAfterKernel) {
  ASYNCTP_REQUIRE_SM90();
  ASYNCTP_REQUIRE_SINGLE_CONNECTION();
  const Seed seed("after");
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const std::uint32_t epoch0 = first_epoch(rng);
  FullGridCase fc;
  ASSERT_NO_FATAL_FAILURE(setup(fc, rng, epoch0 - 1));
  // (b) the producer right behind the kernel; (b') with the gemm stream's
  // next work (an event record, or a memset: a kernel) enqueued between the
  // kernel and the producer, as a caller's following work would be.
  struct Variant {
    Between between;
    const char* name;
    int calls;
  };
  const Variant variants[] = {{Between::nothing, "producer right after kernel", kMaxConnCalls},
                              {Between::event_record, "event record on gemm stream between", 2},
                              {Between::memset, "memset on gemm stream between", 2}};
  int call = 0;
  for (const Variant& v : variants) {
    int completed = 0, timed_out = 0;
    for (int i = 0; i < v.calls; ++i, ++call) {
      const int pivot = (3 * call + 1) % kWorld;
      const std::uint32_t epoch = epoch0 + static_cast<std::uint32_t>(call);
      const std::string what = describe(fc) + " MAX_CONNECTIONS=1 " + v.name + " call " +
                               std::to_string(i) + " pivot " + std::to_string(pivot);
      SCOPED_TRACE(what);
      CallResult r;
      ASSERT_NO_FATAL_FAILURE(run_call(fc, pivot, epoch, kMaxConnTimeoutNs,
                                       /*producer_first=*/false, Source::pinned_host, what, &r,
                                       v.between));
      if (r.err[0] == 0) {
        ++completed;
        std::printf(
            "  OUTCOME 3b (MAX_CONNECTIONS=1, %s) call %d: completed, kernel %.3f ms, "
            "host %.3f ms\n",
            v.name, i, double(r.kernel_ms), r.host_ms);
        ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, what));
      } else {
        ++timed_out;
        std::printf(
            "  OUTCOME 3b (MAX_CONNECTIONS=1, %s) call %d: kernel wait TIMED OUT on "
            "chunk %u (pivot %d; flag seen %u, epoch %u), kernel %.3f ms, host %.3f ms: "
            "%s\n",
            v.name, i, r.err[0] - 1, pivot, r.err[1], r.err[2], double(r.kernel_ms), r.host_ms,
            nat::native_gemm_error_message(r.err.data(), kMaxConnTimeoutNs).c_str());
        EXPECT_LT(r.err[0] - 1, static_cast<std::uint32_t>(kWorld)) << "error word 0 = 1 + chunk";
        EXPECT_EQ(epoch, r.err[2]) << "error word 2 = the epoch expected";
      }
    }
    std::printf("  OUTCOME 3b summary (%s): %d of %d calls completed, %d timed out\n", v.name,
                completed, v.calls, timed_out);
  }
}

// ---------------------------------------------------------------------------
// 4. Negative control: a same-GPU device-to-device cudaMemcpyAsync as the
//    producer beside the full grid. Such a copy runs as a kernel on SMs (the
//    hang seen on the H200); with a 2 s kernel timeout the
//    call must end either way. Asserts only boundedness (and correctness if
//    it completed); prints the outcome.

TEST(ProducerNegativeControl, DeviceToDeviceBesideFullGrid) {
  ASYNCTP_REQUIRE_SM90();
  constexpr std::uint64_t kTimeoutNs = 2'000'000'000ull;
  // Every config: whether a copy kernel fits beside the grid depends on the
  // registers, shared memory and threads each persistent CTA leaves free.
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    const Seed seed(std::string("d2d/") + config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    const std::uint32_t epoch = first_epoch(rng);
    FullGridCase fc;
    ASSERT_NO_FATAL_FAILURE(setup(fc, rng, epoch - 1, /*device_source=*/true, &config));
    const int pivot = static_cast<int>(rng() % kWorld);
    const std::string what = describe(fc) + " D2D producer pivot " + std::to_string(pivot);
    SCOPED_TRACE(what);
    CallResult r;
    ASSERT_NO_FATAL_FAILURE(
        run_call(fc, pivot, epoch, kTimeoutNs, /*producer_first=*/false, Source::device, what, &r));
    if (r.err[0] != 0) {
      std::printf(
          "  D2D beside full grid (%s): timed out on chunk %u (pivot %d; flag seen %u, "
          "epoch %u; kernel %.3f ms, host %.3f ms): %s\n",
          describe(fc).c_str(), r.err[0] - 1, pivot, r.err[1], r.err[2], double(r.kernel_ms),
          r.host_ms, nat::native_gemm_error_message(r.err.data(), kTimeoutNs).c_str());
      EXPECT_EQ(epoch, r.err[2]);
    } else {
      std::printf("  D2D beside full grid (%s): completed in %.3f ms (kernel events %.3f ms)\n",
                  describe(fc).c_str(), r.host_ms, double(r.kernel_ms));
      ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, what));
    }
    // The device is still usable: the same call with the copy-engine producer.
    CallResult again;
    ASSERT_NO_FATAL_FAILURE(run_call(fc, pivot, epoch + 1, 5'000'000'000ull, false,
                                     Source::pinned_host, what + " then H2D", &again));
    ASSERT_EQ(0u, again.err[0]) << nat::native_gemm_error_message(again.err.data(),
                                                                  5'000'000'000ull);
    ASSERT_NO_FATAL_FAILURE(expect_correct(*fc.hp, fc.dp, what + " then H2D producer"));
  }
}

}  // namespace
