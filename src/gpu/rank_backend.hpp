// What a runtime's backend gives the host orchestration that CUDA and HIP
// share (src/gpu), for one rank: the planner's capabilities on its device,
// its native kernel, its library GEMM. Everything else a call does (checks,
// agreement, streams, links, signals, the pipelined and decomposed
// schedules, graph capture) is written once above this interface.
// Implemented by src/cuda/rank_backend.hpp (the CUTLASS kernel, cuBLAS) and
// src/hip/rank_backend.hpp (the MFMA kernel, hipBLAS where built in);
// gpu/runtime_backend.hpp names the one of the runtime being compiled for.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/tensor.hpp"
#include "core/config.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/library_gemm.hpp"
#include "gpu/rank_resources.hpp"

namespace asynctp::gpu {

using core::NativeKernel;

// One rank's native reduce-scatter GEMM, for either transport: partial
// (M x n, the output dtype) = a @ b, one persistent grid that leaves at least
// sms_left_free SMs idle, waits on nothing and computes the chunks in
// core::send_order, setting done_flags[c * pieces + j] = epoch once piece j
// of chunk c (its rows [j m / pieces, (j + 1) m / pieces)) is stored
// (done_counters: a word per piece, 0 before and after the launch).
struct NativeReduceScatter {
  core::ProblemDesc problem;
  std::string kernel;  // the plan's native config
  TensorView a, b;
  void* partial = nullptr;
  std::uint32_t epoch = 1;
  int sms_left_free = 0;
  std::uint32_t* done_flags = nullptr;  // set by gpu::enqueue_native_partial
  std::uint32_t* done_counters = nullptr;
  int pieces = 1;  // the grid sees each piece as a chunk: the same rows in the same order
};

struct BackendChoice {
  core::BackendCaps caps;
  // Backends with one native kernel (HIP) name it here when it can run the
  // problem; backends with several configs report them in caps and the
  // planner picks one (core::plan).
  std::optional<NativeKernel> kernel;
  // What the native GEMM sustains on this device (TFLOP/s, its dtype), for
  // the reduce-scatter's signal pieces (reduce_scatter_pieces); 0: unknown.
  double native_tflops = 0;
};

class RankBackend {
 public:
  virtual ~RankBackend() = default;

  virtual DeviceKind device_kind() const noexcept = 0;
  virtual const char* name() const noexcept = 0;  // "cuda", "hip": in messages
  virtual int device() const noexcept = 0;        // the rank's GPU ordinal

  // The planner's capabilities for `problem` and the native kernel to run it
  // with (options may ask for a kernel tile). The device must be current.
  virtual BackendChoice choose(const core::ProblemDesc& problem,
                               const core::ResolvedOptions& options) const = 0;

  // The native kernel on res.compute: one persistent grid that waits on
  // `flags` (one per signal piece, set to call.epoch when the piece is in
  // the gathered buffer) and leaves a timeout in res.error_words.
  virtual void launch_native(const CallSpec& call, RankResources& res,
                             const std::uint32_t* flags) = 0;
  // Whether launch_native can read the rank's own chunk from its shard
  // (CallSpec::local_chunk_in_place), so that the kernel need not wait for
  // that chunk's copy into the gathered A.
  virtual bool native_reads_local_shard() const noexcept { return false; }

  // The native reduce-scatter GEMM on res.compute (NativeReduceScatter).
  // Backends without that kernel report it in their capabilities, so the
  // planner never reaches this default.
  virtual void launch_native_reduce_scatter(const NativeReduceScatter& call, RankResources& res);

  // The library GEMM of lane 0 (decomposed, pipelined's even chunks) or 1;
  // nullptr when this build has none (the capabilities then say so).
  virtual LibraryGemm* library_gemm(int lane) noexcept = 0;

  // The native kernel's error words ([0] 1 + chunk that timed out, [1] the
  // flag it saw, [2] the epoch it waited for) as text; "" when [0] is 0.
  virtual std::string native_error_message(const std::uint32_t words[3],
                                           std::uint64_t timeout_ns) const = 0;
};

inline void RankBackend::launch_native_reduce_scatter(const NativeReduceScatter&, RankResources&) {
  throw Error(ErrorCode::unsupported,
              std::string("the ") + name() + " backend has no native reduce-scatter kernel");
}

// The backend's library GEMM of `lane`; throws Error(unsupported) naming
// `path` when the build has none (the planner never picks such a path).
inline LibraryGemm& library_lane(RankBackend& backend, int lane, const char* path) {
  LibraryGemm* gemm = backend.library_gemm(lane);
  if (!gemm) {
    throw Error(ErrorCode::unsupported,
                std::string(path) + " on " + backend.name() + ": this build has no library GEMM");
  }
  return *gemm;
}

}  // namespace asynctp::gpu
