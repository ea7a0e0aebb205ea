#include "cuda/nccl/peer_copy_probe.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <thread>
#include <vector>

#include "core/lookup.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/nccl/full_grid_wait.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::nccl {

const char* to_string(CopyMethod method) noexcept {
  constexpr core::Entry<CopyMethod, const char*> kNames[] = {
      {CopyMethod::memcpy_async, "cudaMemcpyAsync(cudaMemcpyDefault)"},
      {CopyMethod::memcpy_batch_prefer_overlap, "cudaMemcpyBatchAsync(PreferOverlapWithCompute)"}};
  return core::lookup(kNames, method, "?");
}

const char* to_string(CopyVerdict verdict) noexcept {
  constexpr core::Entry<CopyVerdict, const char*> kNames[] = {
      {CopyVerdict::copy_engines, "copy engines"},
      {CopyVerdict::needs_sms, "needs SMs"},
      {CopyVerdict::inconclusive, "inconclusive"},
      {CopyVerdict::failed, "failed"}};
  return core::lookup(kNames, verdict, "?");
}

bool peer_copies_need_sms(const PeerCopyProbe& probe) noexcept {
  return probe.verdict == CopyVerdict::needs_sms;
}

std::optional<std::string> peer_copy_native_blocker(const PeerCopyProbe& probe) {
  if (!peer_copies_need_sms(probe)) return std::nullopt;
  return std::string("the peer pulls (") + to_string(probe.method) +
         ") run on SMs here, and native's persistent grid holds every SM while it waits for "
         "them (probe: " +
         probe.detail + ")";
}

void apply_peer_copy_probe(const PeerCopyProbe& probe, core::BackendCaps& caps) {
  if (const auto why = peer_copy_native_blocker(probe)) {
    caps.native_supported = false;
    caps.native_unsupported_reason = *why;
  }
}

namespace {

using cuda::check_cuda;
using Clock = std::chrono::steady_clock;

// Device memory, or (leak()) not freed: a probe whose grid outlived the host
// bound may still be using it.
struct DeviceMemory {
  void* p = nullptr;
  ~DeviceMemory() {
    if (p) (void)cudaFree(p);
  }
  void leak() { p = nullptr; }
};

struct OwnedStream {
  cudaStream_t s = nullptr;
  ~OwnedStream() {
    if (s) (void)cudaStreamDestroy(s);
  }
};

void enqueue_copy(CopyMethod method, void* dst, const void* src, std::size_t bytes,
                  cudaStream_t stream) {
  if (method == CopyMethod::memcpy_async) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream),
               "cudaMemcpyAsync(probe copy)");
    return;
  }
#if CUDART_VERSION >= 12080
  void* dsts[] = {dst};
  const void* srcs[] = {src};
  std::size_t sizes[] = {bytes};
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  std::size_t first_copy[] = {0};
#if CUDART_VERSION >= 13000
  check_cuda(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attributes, first_copy, 1, stream),
             "cudaMemcpyBatchAsync(probe copy)");
#else
  std::size_t failed_index = 0;
  check_cuda(cudaMemcpyBatchAsync(dsts, const_cast<void**>(srcs), sizes, 1, &attributes, first_copy,
                                  1, &failed_index, stream),
             "cudaMemcpyBatchAsync(probe copy)");
#endif
#else
  (void)dst, (void)src, (void)bytes, (void)stream;
  throw Error(ErrorCode::unsupported, "cudaMemcpyBatchAsync needs CUDA 12.8 or newer");
#endif
}

// True once `stream`'s work is done (*status its status), false at `deadline`.
bool wait_until(cudaStream_t stream, Clock::time_point deadline, cudaError_t* status) {
  while (true) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q != cudaErrorNotReady) {
      *status = q;
      return true;
    }
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + (bytes % (1u << 20) ? "+" : "") + " MiB";
}

}  // namespace

PeerCopyProbe probe_copy_beside_full_grid(int device, const void* source,
                                          const std::string& source_name, CopyMethod method,
                                          const ProbeOptions& options) {
  PeerCopyProbe out;
  out.method = method;
  const std::string head = std::string(to_string(method)) + " of " + mib(options.bytes) + " from " +
                           source_name + " to GPU " + std::to_string(device) + ": ";
  const auto verdict = [&](CopyVerdict v, const std::string& evidence) {
    out.verdict = v;
    out.detail = head + to_string(v) + " (" + evidence + ")";
    return out;
  };
  if (!source || options.bytes == 0 || options.grid_timeout_ms <= 0) {
    return verdict(CopyVerdict::failed, "no source, no bytes or no grid timeout");
  }
  try {
    check_cuda(cudaSetDevice(device), "cudaSetDevice(probe device)");
    const char* why = "";
    const int per_sm = full_grid_blocks_per_sm(device, &why);
    if (per_sm == 0) return verdict(CopyVerdict::inconclusive, why);
    int sms = 0;
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
               "cudaDeviceGetAttribute(SM count)");

    OwnedStream grid, copy;
    check_cuda(cudaStreamCreateWithFlags(&grid.s, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaStreamCreateWithFlags(&copy.s, cudaStreamNonBlocking), "cudaStreamCreate");
    DeviceMemory words_memory, dst_memory;
    check_cuda(cudaMalloc(&words_memory.p, sizeof(FullGridWords) + sizeof(std::uint32_t)),
               "cudaMalloc(probe words)");
    check_cuda(cudaMalloc(&dst_memory.p, options.bytes), "cudaMalloc(probe destination)");
    auto* words = static_cast<FullGridWords*>(words_memory.p);
    auto* flag = reinterpret_cast<std::uint32_t*>(words + 1);

    // Words zeroed (first flag time "never"); the destination starts unlike
    // the source, so that a copy that did not happen shows.
    FullGridWords initial{};
    initial.first_flag_ns = std::numeric_limits<std::uint64_t>::max();
    const std::uint32_t zero = 0;
    unsigned char first = 0;
    check_cuda(cudaMemcpy(words, &initial, sizeof initial, cudaMemcpyHostToDevice),
               "cudaMemcpy(probe words)");
    check_cuda(cudaMemcpy(flag, &zero, sizeof zero, cudaMemcpyHostToDevice),
               "cudaMemcpy(probe flag)");
    check_cuda(cudaMemcpy(&first, source, 1, cudaMemcpyDefault), "cudaMemcpy(probe source byte)");
    check_cuda(
        cudaMemsetAsync(dst_memory.p, static_cast<unsigned char>(~first), options.bytes, grid.s),
        "cudaMemsetAsync(probe destination)");
    check_cuda(cudaStreamSynchronize(grid.s), "cudaStreamSynchronize(probe set-up)");

    constexpr std::uint32_t kEpoch = 1;
    const auto timeout_ns = static_cast<std::uint64_t>(options.grid_timeout_ms) * 1'000'000u;
    check_cuda(launch_full_grid_wait(words, flag, kEpoch, timeout_ns, per_sm * sms, grid.s),
               "probe grid launch");
    // The copy starts once every block holds its SM; the grid's last block
    // writes `ready` in every case, so this wait is bounded too.
    gpu::wait_value32_equal(copy.s, &words->ready, kEpoch);
    enqueue_copy(method, dst_memory.p, source, options.bytes, copy.s);
    gpu::write_value32(copy.s, flag, kEpoch);

    const auto limit = Clock::now() + std::chrono::milliseconds(4 * options.grid_timeout_ms) +
                       std::chrono::seconds(10);
    cudaError_t grid_status = cudaSuccess, copy_status = cudaSuccess;
    if (!wait_until(grid.s, limit, &grid_status) || !wait_until(copy.s, limit, &copy_status)) {
      words_memory.leak();
      dst_memory.leak();
      grid.s = copy.s = nullptr;
      return verdict(CopyVerdict::failed, "the grid or the copy still ran past the host's bound");
    }
    check_cuda(grid_status, "probe grid");
    check_cuda(copy_status, "probe copy");

    FullGridWords seen{};
    check_cuda(cudaMemcpy(&seen, words, sizeof seen, cudaMemcpyDeviceToHost),
               "cudaMemcpy(probe words back)");
    std::vector<unsigned char> expected(options.bytes), got(options.bytes);
    check_cuda(cudaMemcpy(expected.data(), source, options.bytes, cudaMemcpyDefault),
               "cudaMemcpy(probe source back)");
    check_cuda(cudaMemcpy(got.data(), dst_memory.p, options.bytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy(probe destination back)");

    const std::uint32_t blocks = static_cast<std::uint32_t>(per_sm * sms);
    if (seen.first_flag_ns != std::numeric_limits<std::uint64_t>::max()) {
      out.copy_ms = static_cast<double>(seen.first_flag_ns - seen.ready_ns) / 1e6;
    }
    const std::string grid_text = std::to_string(blocks) + " blocks of " +
                                  std::to_string(kFullGridBlockThreads) + " threads on " +
                                  std::to_string(sms) + " SMs";
    if (std::memcmp(expected.data(), got.data(), options.bytes) != 0) {
      return verdict(CopyVerdict::failed, "the copied bytes differ from the source's");
    }
    if (seen.not_resident > 0) {
      return verdict(CopyVerdict::inconclusive,
                     std::to_string(seen.not_resident) + " of " + grid_text +
                         " never saw the whole grid resident: other work held SMs");
    }
    if (seen.flag_timeouts > 0) {
      return verdict(CopyVerdict::needs_sms,
                     std::to_string(seen.flag_timeouts) + " of " + grid_text + " gave up after " +
                         std::to_string(options.grid_timeout_ms) +
                         " ms without the copy's flag; it came only once they left");
    }
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", out.copy_ms);
    return verdict(CopyVerdict::copy_engines, std::string("flag seen ") + ms + " ms after " +
                                                  grid_text + " held every SM; none gave up");
  } catch (const std::exception& e) {
    (void)cudaGetLastError();
    return verdict(CopyVerdict::failed, e.what());
  }
}

}  // namespace asynctp::nccl
