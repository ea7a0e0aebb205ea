// The local half of a GPU call, shared by every GPU communicator (loopback
// ranks on one GPU, NCCL ranks on many) of either runtime, in one place: the
// op's rules (core/validate), device residency, the device's facts and the
// plan (core::plan) with its native kernel, signal pieces, capture state.
// What the ranks must then agree on is the communicator's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"
#include "call/checked_call.hpp"
#include "call/transport.hpp"
#include "core/config.hpp"
#include "core/op_call.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

using call::CheckedCall;

struct CallSite {
  int world_size = 1;
  int rank = 0;
  // Why this rank cannot pull its peers' shards itself ("" when it can),
  // e.g. peers on another node: then neither native nor pipelined can run,
  // and the planner picks decomposed and says why.
  std::string no_peer_access;
  // Why native must not run on this transport though its peers can be
  // pulled ("" when it may), e.g. the pulls' copies were measured to need
  // SMs, which the persistent grid holds: pipelined then runs instead.
  std::string native_blocked;
  // How peers' bytes reach this rank, for the planner's cost model.
  core::LinkFacts link;
};

// Makes the backend's device current. Throws Error(invalid_argument) naming
// the argument and its rule, or Error(unsupported) when a forced algorithm
// cannot run.
CheckedCall check_call(const CallSite& site, const RankBackend& backend, const core::OpCall& call,
                       const Options& options);

// The device work's description of a checked call of rank checked.problem.rank:
// its problem, plan, tensors, stream, bound, chunk order and drops (test
// hooks), signal pieces and native kernel. The transport adds what is its
// own: where the chunks come from (shards, link) and go (gathered), and the
// epoch.
CallSpec call_spec(const CheckedCall& checked, const core::OpCall& call, const Options& options);

// A transport whose ranks run on GPUs (loopback ranks on one GPU, NCCL ranks
// on many): its local check is check_call at the site it describes, then
// the rules of its own; it enqueues on the caller's stream and returns.
class GpuTransport : public call::Transport {
 public:
  DeviceKind device_kind() const noexcept final { return backend_->device_kind(); }
  bool synchronous() const noexcept final { return false; }
  CheckedCall check(const core::OpCall& call, const Options& options) const final;
  // The slot's span events (RankResources::arm_timed_span), recorded by the
  // next uncaptured call beside call_begin and call_end.
  void time_next_call(int slot) final;
  std::optional<double> timed_call_ms(int slot, bool wait) final;

 protected:
  // The rank's streams, events and workspaces.
  virtual RankResources& resources() = 0;
  // This rank's place in the communicator, and what it cannot do there.
  virtual CallSite site() const = 0;
  // Throws Error naming the argument and the rule this transport adds.
  virtual void check_own_rules(const core::OpCall& call, const CheckedCall& checked) const {
    (void)call;
    (void)checked;
  }

  std::unique_ptr<RankBackend> backend_;  // the rank's device, kernels and GEMMs
};

// Pieces of at least this size: smaller copies lose copy-engine efficiency.
inline constexpr std::size_t kMinPieceBytes = 2u << 20;

// The pieces a chunk of `rows` rows is split into: the largest of 4, 2, 1
// (kMaxSignalPieces) whose pieces are at least kMinPieceBytes and hold a
// whole number of `row_granularity` rows (the native kernel's tile
// granularity, so a tile never straddles two pieces; 1 for the library GEMM
// paths).
int signal_pieces(std::int64_t rows, std::size_t chunk_bytes, std::int64_t row_granularity);

// The reduce-scatter's pieces: 2 where the native grid (row_granularity: its
// tile rows; 0 for a library GEMM) feeds the arrival link's model, a chunk
// splits into two whole tile rows, and the link carries a chunk slower than
// the grid computes one (at native_tflops; 0: unknown), else 1. There the
// first piece computed starts the link about one wave of tiles earlier than
// the whole first chunk would; where the GEMM is the slower, twice the
// signals cost the grid more than an earlier start gains (bench/NOTES.md).
// Library GEMMs finish whole chunks, and the PCIe copies and the NCCL
// transport ship whole chunks.
int reduce_scatter_pieces(const CallSite& site, const core::ProblemDesc& problem,
                          std::int64_t row_granularity, double native_tflops);

// Throws Error(invalid_argument) "<name>: <rule>" unless `t` says it is on
// `device` and the runtime agrees that t.data is device (or managed) memory
// of that device: a host pointer would fault inside a kernel, far from the
// mistake.
void check_on_device(const char* name, const TensorView& t, int device);

// Whether `stream` is capturing a graph; throws Error(backend) when the
// runtime cannot tell.
bool stream_is_capturing(rt::StreamHandle stream);

// Whether the GEMMs of `algorithm` (with native's `tail`) have every library
// handle they need: a graph capture cannot make one. Lane 0 serves
// decomposed and pipelined; lane 1 pipelined's second lane and native's
// library tail.
bool gemm_ready(RankBackend& backend, Algorithm algorithm, NativeTail tail = NativeTail::kernel);
// Makes the library GEMM handles gemm_ready checks for (LibraryGemm::prepare).
void prepare_gemm(RankBackend& backend, Algorithm algorithm, NativeTail tail = NativeTail::kernel);

RunInfo to_run_info(const core::Plan& plan);

// The peers' chunks in the order the producer moves them: the schedule's
// order (pivot first), or a test hook's permutation of it, without `rank`.
std::vector<int> arrival_order(int world, int rank, const ArrivalHooks& hooks);

[[noreturn]] void fail_argument(const std::string& argument, const std::string& rule);

}  // namespace asynctp::gpu
