#include "cuda/nccl/nccl_comm.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "cuda/nccl/agreement_wire.hpp"
#include "cuda/nccl/enqueue_nccl_call.hpp"
#include "cuda/nccl/enqueue_nccl_reduce_scatter.hpp"
#include "cuda/nccl/nccl_check.hpp"
#include "cuda/nccl/nccl_device_api.hpp"
#include "cuda/nccl/peer_copy_probe.hpp"
#include "gpu/check.hpp"
#include "gpu/runtime_backend.hpp"

namespace asynctp::nccl {
namespace {

namespace rt = gpu::rt;

int comm_device(ncclComm_t comm) {
  int device = -1;
  check_nccl(ncclCommCuDevice(comm, &device), "ncclCommCuDevice", comm);
  return device;
}

int comm_rank(ncclComm_t comm) {
  int rank = -1;
  check_nccl(ncclCommUserRank(comm, &rank), "ncclCommUserRank", comm);
  return rank;
}

int comm_size(ncclComm_t comm) {
  int size = 0;
  check_nccl(ncclCommCount(comm, &size), "ncclCommCount", comm);
  return size;
}

constexpr std::size_t kBarrierWords = 4;  // [0] generation, [1..3] error words

bool pulls_from_peers(Algorithm algorithm) {
  return algorithm == Algorithm::native || algorithm == Algorithm::pipelined;
}

// The agreement cache's key: the call as the ranks agreed on it, without
// what only the first call of a shape carries.
std::string cache_key(core::CallRecord record) {
  record.grows_workspace = false;
  const WireRecord wire = encode(record);
  return std::string(wire.begin(), wire.end());
}

}  // namespace

NcclComm::NcclComm(ncclComm_t comm, bool owns_comm)
    : comm_(comm),
      owns_comm_(owns_comm),
      rank_(comm_rank(comm)),
      world_(comm_size(comm)),
      workspace_(comm, rank_, world_) {
  // Every rank's process loaded the same NCCL, so all refuse alike here.
  require_device_api();
  // Local set-up first. The peers learn through a bounded all-gather whether
  // it succeeded on every rank before any of them enters the collective
  // probe below (which has no timeout): a rank that cannot set up aborts
  // the communicator, and its peers' bounded wait ends with an error.
  const std::int64_t timeout_ms = core::resolve_options(Options{}).wait_timeout_ms;
  core::CallRecord ready;
  ready.world_size = world_;
  try {
    backend_ = gpu::make_rank_backend(comm_device(comm));
    res_ = std::make_unique<gpu::RankResources>(world_);
    barrier_state_.ensure(kBarrierWords * sizeof(std::uint32_t),
                          "device allocation (barrier state)");
    gpu::check(rt::device_memset(barrier_state_.get(), 0, barrier_state_.size()),
               "memset (barrier state)");
    const std::size_t wire_bytes = kWireRecordBytes * static_cast<std::size_t>(world_ + 1);
    wire_.ensure(wire_bytes, "device allocation (agreement records)");
    wire_host_.ensure(wire_bytes, "pinned allocation (agreement records)");
    ready.ok = true;
  } catch (const Error& e) {
    if (!owns_comm_) throw;  // the caller's communicator is the caller's to abort
    (void)ncclCommAbort(comm_);
    aborted_ = true;
    throw Error(e.code(), "rank " + std::to_string(rank_) + ": " + e.what() +
                              " (the NCCL communicator was aborted; the other ranks' set-up "
                              "fails within ASYNCTP_WAIT_TIMEOUT_MS)");
  }
  for (const core::CallRecord& peer :
       exchange(ready, nullptr, timeout_ms, "the communicator's set-up agreement")) {
    (void)peer;  // a peer that failed never joins: the exchange timed out
  }
  no_peer_access_ = peer_access_problem(comm, world_);
  if (world_ > 1 && no_peer_access_.empty()) probe_peer_copies(timeout_ms);
  if (!no_peer_access_.empty()) {
    core::log(core::LogLevel::info, rank_,
              "no peer pulls on this communicator (" + no_peer_access_ +
                  "): native and pipelined fall back to decomposed");
  }
}

NcclComm::~NcclComm() {
  if (backend_) (void)rt::set_device(backend_->device());
  (void)rt::device_synchronize();
  // The window belongs to the communicator: give it back while both live.
  workspace_.release(/*communicator_gone=*/aborted_);
  if (owns_comm_ && !aborted_) {
    // Finalize flushes NCCL's own pending work; a broken communicator (a
    // peer vanished) is aborted instead, which never waits on peers.
    if (broken_.empty() && ncclCommFinalize(comm_) == ncclSuccess) {
      (void)ncclCommDestroy(comm_);
    } else {
      (void)ncclCommAbort(comm_);
    }
  }
}

const char* NcclComm::backend_name() const noexcept {
  return rt::kDeviceKind == DeviceKind::cuda ? "cuda-nccl" : "hip-rccl";
}

void NcclComm::check_usable() const {
  if (!broken_.empty()) {
    throw Error(ErrorCode::backend, "rank " + std::to_string(rank_) +
                                        ": this communicator is unusable after an earlier "
                                        "failure (" +
                                        broken_ + "); make a new one");
  }
}

gpu::CallSite NcclComm::site() const {
  gpu::CallSite site;
  site.world_size = world_;
  site.rank = rank_;
  site.no_peer_access = no_peer_access_;
  site.native_blocked = peer_copy_blocker_;
  site.link.kind = core::LinkFacts::Kind::nccl;
  return site;
}

void NcclComm::probe_peer_copies(std::int64_t timeout_ms) {
  ProbeOptions options;
  grow_workspace(options.bytes, nullptr, timeout_ms);  // the peers' windows to copy from
  const int peer = (rank_ + 1) % world_;
  const PeerCopyProbe probe = probe_copy_beside_full_grid(
      device(), workspace_.peer_gathered(peer),
      "rank " + std::to_string(peer) + "'s symmetric window", CopyMethod::memcpy_async, options);
  core::log(core::LogLevel::info, rank_, "peer-copy probe: " + probe.detail);
  core::CallRecord verdict;
  verdict.world_size = world_;
  verdict.ok = true;
  if (const auto blocker = peer_copy_native_blocker(probe)) {
    verdict.ok = false;
    verdict.error = *blocker;
  }
  const std::vector<core::CallRecord> verdicts =
      exchange(verdict, nullptr, timeout_ms, "the peer-copy probe's agreement");
  for (std::size_t r = 0; r < verdicts.size(); ++r) {
    if (verdicts[r].ok) continue;
    peer_copy_blocker_ = "rank " + std::to_string(r) + ": " + verdicts[r].error;
    core::log(core::LogLevel::warn, rank_,
              "native disabled on this communicator: " + peer_copy_blocker_);
    break;
  }
}

std::size_t NcclComm::workspace_bytes(const call::CheckedCall& checked) const {
  if (!pulls_from_peers(checked.plan.algorithm)) return 0;
  // The reduce-scatter's pipelined path: its receive slots.
  if (checked.problem.op == core::OpKind::matmul_reduce_scatter) {
    return reduce_scatter_slot_bytes(checked.problem);
  }
  const core::ProblemDesc& p = checked.problem;
  return static_cast<std::size_t>(p.gathered_rows() * p.k) * element_size(p.dtype);
}

void NcclComm::abort_communicator(const std::string& why) noexcept {
  if (broken_.empty()) broken_ = why;
  if (aborted_) return;
  aborted_ = true;
  workspace_.release(/*communicator_gone=*/true);
  // On a thread of its own: NCCL's abort may wait for the communicator's
  // queued work, which can sit behind whatever held this call up (the caller's
  // own stream, say); the error must reach the caller now, not then.
  try {
    std::thread([comm = comm_] { (void)ncclCommAbort(comm); }).detach();
  } catch (...) {
    (void)ncclCommAbort(comm_);
  }
  core::log(core::LogLevel::warn, rank_, "NCCL communicator aborted: " + why);
}

void NcclComm::wait_or_abort(rt::EventHandle event, std::int64_t timeout_ms,
                             const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const rt::Status q = rt::event_query(event);
    if (q == rt::kSuccess) return;
    if (q != rt::kNotReady) gpu::check(q, what.c_str());
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    if (waited > timeout_ms) {
      const std::string why = what + " did not complete within " + std::to_string(timeout_ms) +
                              " ms (does every rank make the same call? a rank that failed "
                              "earlier, exited or makes another call never joins)";
      abort_communicator(why);
      throw Error(ErrorCode::timeout, "rank " + std::to_string(rank_) + ": " + why +
                                          "; the NCCL communicator was aborted, make a new one");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::vector<core::CallRecord> NcclComm::exchange(const core::CallRecord& mine,
                                                 rt::StreamHandle stream, std::int64_t timeout_ms,
                                                 const std::string& what) {
  // Pinned host memory on both ends: a copy to or from pageable memory may
  // block the host until the copy runs, i.e. until every rank has joined the
  // all-gather ahead of it, and the bounded wait below would never start.
  char* host = static_cast<char*>(wire_host_.get());
  char* device = static_cast<char*>(wire_.get());
  const WireRecord encoded = encode(mine);
  std::memcpy(host, encoded.data(), kWireRecordBytes);
  const std::size_t all_bytes = kWireRecordBytes * static_cast<std::size_t>(world_);
  gpu::check(rt::memcpy_async(device, host, kWireRecordBytes, rt::Copy::host_to_device, stream),
             "copy (agreement record)");
  check_nccl(
      ncclAllGather(device, device + kWireRecordBytes, kWireRecordBytes, ncclUint8, comm_, stream),
      "ncclAllGather(agreement records)", comm_);
  gpu::check(rt::memcpy_async(host + kWireRecordBytes, device + kWireRecordBytes, all_bytes,
                              rt::Copy::device_to_host, stream),
             "copy (agreement records back)");
  gpu::check(rt::event_record(exchanged_.get(), stream), "event record (agreement)");
  wait_or_abort(exchanged_.get(), timeout_ms, what);

  std::vector<core::CallRecord> records;
  for (int r = 0; r < world_; ++r) {
    WireRecord wire;
    std::memcpy(wire.data(), host + kWireRecordBytes * static_cast<std::size_t>(r + 1),
                kWireRecordBytes);
    records.push_back(decode(wire));
  }
  return records;
}

// Every rank publishes its record through an all-gather and reads all of
// them; find_disagreement gives every rank the same verdict. The all-gather
// goes on the caller's stream, where this communicator's other NCCL work
// (decomposed's all-gather) is, so NCCL sees its operations in one order on
// one stream; the host then waits for that stream (bounded), which is why
// this happens once per distinct call only.
void NcclComm::agree(core::CallRecord& mine, std::exception_ptr& local_error,
                     const call::CheckedCall& checked, const core::OpCall&, const Options& options,
                     std::int64_t timeout_ms) {
  const auto stream = static_cast<rt::StreamHandle>(options.stream);
  // The call as this rank planned it; a call agreed before runs the plan the
  // group agreed on then, and only that plan's workspace must fit.
  const std::string key = cache_key(mine);
  const auto agreed = agreed_calls_.find(key);
  call::CheckedCall planned = checked;
  if (agreed != agreed_calls_.end()) planned.plan = agreed->second;
  if (mine.ok) {
    mine.grows_workspace =
        !workspace_.fits(workspace_bytes(planned)) && workspace_bytes(planned) > 0;
    if (mine.grows_workspace) {
      // Growth is collective: a rank whose earlier call failed on the device
      // must say so here, before its peers enter the growth, not after.
      try {
        synchronize();
      } catch (const Error& e) {
        core::record_local_failure(mine, local_error,
                                   std::string("an earlier call failed: ") + e.what());
        check_usable();  // a broken communicator cannot take part in an agreement
      }
    }
  }
  if (mine.ok && !mine.grows_workspace && agreed != agreed_calls_.end()) {
    mine.plan = agreed->second;
    return;
  }
  if (checked.capturing || !mine.ok) {
    // Inside a capture no host round trip is possible: report a local error
    // at once (the peers' calls fail for the same reason, or time out at
    // their first barrier), and refuse a call the ranks have not agreed on.
    bool capturing = checked.capturing;
    if (!mine.ok) (void)rt::stream_capturing(stream, &capturing);
    rt::clear_last_error();
    if (capturing) {
      if (local_error) std::rethrow_exception(local_error);
      gpu::fail_argument("options.stream",
                         "is capturing a graph, but the ranks have not yet agreed on this call "
                         "(a host round trip); make the same call once uncaptured first");
    }
  }

  const std::vector<core::CallRecord> records =
      exchange(mine, stream, timeout_ms, "the agreement all-gather");
  const std::string disagreement = core::find_disagreement(records);
  if (!disagreement.empty()) {
    if (local_error) std::rethrow_exception(local_error);
    throw Error(ErrorCode::mismatch, disagreement);
  }
  mine.plan = core::agreed_plan(records, rank_);
  agreed_calls_[key] = mine.plan;
  if (core::log_enabled(core::LogLevel::info)) {
    core::log(core::LogLevel::info, rank_,
              mine.problem.to_string() + " -> " + to_string(mine.plan.algorithm) + ": " +
                  mine.plan.reason);
  }
}

void NcclComm::grow_workspace(std::size_t gathered_bytes, rt::StreamHandle stream,
                              std::int64_t timeout_ms) {
  // Local half first; every rank then learns whether every allocation
  // succeeded before any enters NCCL's registration, which has no timeout.
  core::CallRecord outcome;
  outcome.world_size = world_;
  outcome.ok = true;
  try {
    workspace_.allocate(gathered_bytes);
  } catch (const Error& e) {
    outcome.ok = false;
    outcome.error = e.what();
  }
  const std::vector<core::CallRecord> outcomes =
      exchange(outcome, stream, timeout_ms, "the symmetric workspace's growth agreement");
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].ok) continue;
    workspace_.release();
    throw Error(ErrorCode::backend,
                "rank " + std::to_string(r) + " could not grow its symmetric workspace to " +
                    std::to_string(gathered_bytes) + " bytes: " + outcomes[r].error);
  }
  try {
    workspace_.register_window(stream, [&](rt::EventHandle event, const std::string& what) {
      wait_or_abort(event, timeout_ms, what);
    });
  } catch (const Error& e) {
    // The ranks may be out of step inside NCCL now.
    abort_communicator(std::string("symmetric workspace set-up failed: ") + e.what());
    throw;
  }
}

std::uint32_t NcclComm::execute(const core::OpCall& call, const call::CheckedCall& checked,
                                const Options& options) {
  if (call.op == core::OpKind::matmul_reduce_scatter) {
    return execute_reduce_scatter(call, checked, options);
  }
  const auto stream = static_cast<rt::StreamHandle>(options.stream);
  const std::int64_t timeout_ms = checked.resolved.wait_timeout_ms;
  const TensorView* a_gathered_out = call.a_gathered_out;

  gpu::CallSpec spec = gpu::call_spec(checked, call, options);
  const std::size_t gathered_bytes = gpu::gathered_bytes(spec.problem);
  if (!pulls_from_peers(spec.plan.algorithm)) {
    if (a_gathered_out) {
      spec.gathered = a_gathered_out->data;
    } else {
      if (checked.capturing && res_->gathered.size() < gathered_bytes) {
        gpu::fail_argument("options.stream",
                           "is capturing a graph, but this call would first have to allocate "
                           "its gathered buffer; make the same call once uncaptured first (or "
                           "pass a_gathered_out)");
      }
      spec.gathered = res_->gathered.ensure(gathered_bytes, "device allocation (gathered A)");
    }
  } else {
    prepare_workspace(gathered_bytes, stream, timeout_ms, checked.capturing);
    spec.gathered = workspace_.gathered();
  }
  if (checked.capturing &&
      !gpu::gemm_ready(*backend_, spec.plan.algorithm, spec.plan.native_tail)) {
    gpu::fail_argument("options.stream",
                       "is capturing a graph, but the library GEMM is not set up yet on this "
                       "rank; make the same call once uncaptured first");
  }
  epoch_ = core::next_epoch(epoch_);
  spec.epoch = epoch_;

  NcclCallContext context = call_context(timeout_ms);
  context.a_shard = call.a.data;
  context.a_gathered_out = a_gathered_out ? a_gathered_out->data : nullptr;

  start_trace(checked, options);
  // A failure while enqueuing leaves the ranks' device work out of step.
  try {
    enqueue_nccl_call(spec, context, *res_);
  } catch (const Error& e) {
    res_->trace.abandon();
    abort_communicator(std::string("enqueue failed: ") + e.what());
    throw;
  }
  if (!checked.capturing) {
    gpu::check(rt::event_record(res_->call_done.get(), stream), "event record (call done)");
    pending_ = true;
  }
  pending_timeout_ms_ = timeout_ms;
  pending_epoch_ = spec.epoch;
  pending_pieces_ = spec.pieces;
  return epoch_;
}

void NcclComm::start_trace(const call::CheckedCall& checked, const Options& options) {
  Trace* trace = checked.capturing ? nullptr : options.trace;
  if (trace) {
    const int world = checked.problem.world_size;
    res_->trace.prepare(gpu::DeviceTrace::marks_for(world, gpu::kMaxSignalPieces),
                        world * gpu::kMaxSignalPieces);
  }
  res_->trace.start(trace, rank_, res_->copy_out.get());
}

void NcclComm::prepare_workspace(std::size_t bytes, rt::StreamHandle stream,
                                 std::int64_t timeout_ms, bool capturing) {
  if (!workspace_.fits(bytes)) {
    if (capturing) {
      gpu::fail_argument("options.stream",
                         "is capturing a graph, but the symmetric workspace must grow first "
                         "(collective); make the same call once uncaptured first");
    }
    grow_workspace(bytes, stream, timeout_ms);
  }
  if (workspace_.generation() != workspace_generation_seen_) {
    // New memory, zeroed sync areas: barrier generations restart at 0. On
    // the call's stream, ahead of its first barrier: a reset on another
    // stream could land after that barrier has counted.
    gpu::check(rt::memset_async(barrier_state_.get(), 0, sizeof(std::uint32_t), stream),
               "memset (barrier generation)");
    workspace_generation_seen_ = workspace_.generation();
  }
}

NcclCallContext NcclComm::call_context(std::int64_t timeout_ms) {
  NcclCallContext context;
  context.comm = comm_;
  context.workspace = &workspace_;
  auto* state = static_cast<std::uint32_t*>(barrier_state_.get());
  context.barrier.peer_sync_areas = workspace_.peer_sync_areas_device();
  context.barrier.my_sync_area = workspace_.sync_area();
  context.barrier.generation = state;
  context.barrier.error_words = state + 1;
  context.barrier.rank = rank_;
  context.barrier.world = world_;
  // A peer may reach the second barrier only after its own GEMM gave up on
  // a chunk (one wait timeout): wait longer than that, so only a rank that
  // never comes is reported here.
  context.barrier.timeout_ns = static_cast<std::uint64_t>(2 * timeout_ms + 1000) * 1'000'000u;
  context.backend = backend_.get();
  return context;
}

std::uint32_t NcclComm::execute_reduce_scatter(const core::OpCall& call,
                                               const call::CheckedCall& checked,
                                               const Options& options) {
  const std::int64_t timeout_ms = checked.resolved.wait_timeout_ms;
  NcclReduceScatterCall rs;
  rs.problem = checked.problem;
  rs.plan = checked.plan;
  rs.a = call.a;
  rs.b = call.b;
  rs.out = call.out;
  rs.stream = static_cast<rt::StreamHandle>(options.stream);
  rs.capturing = checked.capturing;
  const std::size_t bytes =
      std::max<std::size_t>(static_cast<std::size_t>(rs.problem.gathered_rows() * rs.problem.n) *
                                element_size(rs.problem.dtype),
                            1);
  // One rank's pipelined call runs its one chunk on lane 0 only, so only
  // that lane's handle exists after the uncaptured call.
  const Algorithm lanes_used = checked.plan.algorithm == Algorithm::pipelined && world_ == 1
                                   ? Algorithm::decomposed
                                   : checked.plan.algorithm;
  if (checked.capturing &&
      (res_->partial.size() < bytes || !gpu::gemm_ready(*backend_, lanes_used))) {
    gpu::fail_argument("options.stream",
                       "is capturing a graph, but this call would first have to allocate its "
                       "partial product or library GEMM handle; make the same call once "
                       "uncaptured first");
  }
  rs.partial = res_->partial.ensure(bytes, "device allocation (reduce-scatter partial)");
  if (checked.plan.algorithm != Algorithm::decomposed) {
    prepare_workspace(reduce_scatter_slot_bytes(rs.problem), rs.stream, timeout_ms,
                      checked.capturing);
  }
  if (checked.kernel) rs.native_kernel = checked.kernel->name;
  epoch_ = core::next_epoch(epoch_);
  rs.epoch = epoch_;
  start_trace(checked, options);
  try {
    enqueue_nccl_reduce_scatter(rs, call_context(timeout_ms), *res_);
  } catch (const Error& e) {
    res_->trace.abandon();
    abort_communicator(std::string("enqueue failed: ") + e.what());
    throw;
  }
  if (!checked.capturing) {
    gpu::check(rt::event_record(res_->call_done.get(), rs.stream), "event record (call done)");
    pending_ = true;
  }
  pending_timeout_ms_ = timeout_ms;
  pending_epoch_ = epoch_;
  pending_pieces_ = 1;
  return epoch_;
}

void NcclComm::synchronize() {
  gpu::check(rt::set_device(backend_->device()), "set device (rank device)");
  if (pending_) {
    // The kernel's waits and both barriers are bounded; this bounds the rest.
    const std::int64_t bound_ms = 6 * pending_timeout_ms_ + 10'000;
    pending_ = false;
    wait_or_abort(res_->call_done.get(), bound_ms,
                  "the device work of the call of epoch " + std::to_string(pending_epoch_));
  }
  // A traced call's device spans, now that it is done (gpu/device_trace.hpp).
  res_->trace.collect(res_->copy_out.get());
  // The native kernel's gate and the barrier leave their first timeout here
  // (graph replays included); reading clears them.
  std::uint32_t gate[3] = {0, 0, 0};
  std::uint32_t barrier[3] = {0, 0, 0};
  const rt::StreamHandle s = res_->copy_out.get();
  gpu::check(
      rt::memcpy_async(gate, res_->error_words.get(), sizeof gate, rt::Copy::device_to_host, s),
      "copy (error words)");
  auto* state = static_cast<std::uint32_t*>(barrier_state_.get());
  gpu::check(rt::memcpy_async(barrier, state + 1, sizeof barrier, rt::Copy::device_to_host, s),
             "copy (barrier error words)");
  gpu::check(rt::stream_synchronize(s), "stream synchronize (error words)");
  if (gate[0] == 0 && barrier[0] == 0) return;
  gpu::check(rt::memset_async(res_->error_words.get(), 0, sizeof gate, s), "memset (error words)");
  gpu::check(rt::memset_async(state + 1, 0, sizeof barrier, s), "memset (barrier error words)");
  gpu::check(rt::stream_synchronize(s), "stream synchronize (error words)");
  if (barrier[0] != 0) {
    // A peer that never reached a barrier: the ranks are out of step now.
    broken_ = "rank " + std::to_string(rank_) + " waited " + std::to_string(pending_timeout_ms_) +
              " ms at a cross-rank barrier for rank " + std::to_string(barrier[0] - 1) +
              ", which never arrived (barrier generation " + std::to_string(barrier[2]) +
              ", seen " + std::to_string(barrier[1]) + ")";
    throw Error(ErrorCode::timeout, broken_);
  }
  gate[0] = gpu::chunk_word_of_piece_word(gate[0], pending_pieces_);
  throw Error(ErrorCode::timeout,
              "rank " + std::to_string(rank_) + ": " +
                  backend_->native_error_message(
                      gate, static_cast<std::uint64_t>(pending_timeout_ms_) * 1'000'000u));
}

}  // namespace asynctp::nccl
