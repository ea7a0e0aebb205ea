#include "cuda/nccl/nccl_comm.hpp"

#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/nccl/agreement_wire.hpp"
#include "cuda/nccl/enqueue_nccl_call.hpp"
#include "cuda/nccl/nccl_check.hpp"

namespace asynctp::nccl {
namespace {

using cuda::check_cuda;

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

int set_device_of(ncclComm_t comm) {
  const int device = comm_device(comm);
  check_cuda(cudaSetDevice(device), "cudaSetDevice(the communicator's device)");
  return device;
}

constexpr std::size_t kBarrierWords = 4;  // [0] generation, [1..3] error words

}  // namespace

NcclComm::NcclComm(ncclComm_t comm, bool owns_comm)
    : comm_(comm),
      owns_comm_(owns_comm),
      rank_(comm_rank(comm)),
      world_(comm_size(comm)),
      backend_(set_device_of(comm)),
      no_peer_access_(peer_access_problem(comm, world_)),
      res_(world_),
      workspace_(comm, rank_, world_) {
  barrier_state_.ensure(kBarrierWords * sizeof(std::uint32_t), "cudaMalloc(barrier state)");
  check_cuda(cudaMemset(barrier_state_.get(), 0, barrier_state_.size()),
             "cudaMemset(barrier state)");
  wire_.ensure(kWireRecordBytes * static_cast<std::size_t>(world_ + 1),
               "cudaMalloc(agreement records)");
  if (!no_peer_access_.empty()) {
    core::log(core::LogLevel::info, rank_,
              "no peer pulls on this communicator (" + no_peer_access_ +
                  "): native and pipelined fall back to decomposed");
  }
}

NcclComm::~NcclComm() {
  (void)cudaSetDevice(backend_.device());
  (void)cudaDeviceSynchronize();
  // The window belongs to the communicator: give it back while both live.
  workspace_.release();
  if (owns_comm_) {
    // Finalize flushes NCCL's own pending work; a broken communicator (a
    // peer vanished) is aborted instead, which never waits on peers.
    if (broken_.empty() && ncclCommFinalize(comm_) == ncclSuccess) {
      (void)ncclCommDestroy(comm_);
    } else {
      (void)ncclCommAbort(comm_);
    }
  }
}

void NcclComm::check_usable() const {
  if (!broken_.empty()) {
    throw Error(ErrorCode::backend, "rank " + std::to_string(rank_) +
                                        ": this communicator is unusable after an earlier "
                                        "failure (" +
                                        broken_ + "); make a new one");
  }
}

gpu::CheckedCall NcclComm::check_call(const TensorView& a_shard, const TensorView& b,
                                      const TensorView& c_out, const TensorView* a_gathered_out,
                                      const Options& options) const {
  gpu::CallSite site;
  site.world_size = world_;
  site.rank = rank_;
  site.no_peer_access = no_peer_access_;
  gpu::CheckedCall out =
      gpu::check_call(site, backend_, a_shard, b, c_out, a_gathered_out, options);
  if (!no_peer_access_.empty() && out.plan.algorithm == Algorithm::pipelined) {
    gpu::fail_argument("options.algorithm",
                       "pipelined needs this rank to pull its peers' shards, but " +
                           no_peer_access_ + "; use auto or decomposed");
  }
  return out;
}

RunInfo NcclComm::plan_fused_all_gather_matmul(const TensorView& a_shard, const TensorView& b,
                                               const TensorView& c_out,
                                               const TensorView* a_gathered_out,
                                               const Options& options) const {
  return gpu::to_run_info(check_call(a_shard, b, c_out, a_gathered_out, options).plan);
}

void NcclComm::wait_for_event(cudaEvent_t event, std::int64_t timeout_ms, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) check_cuda(q, what.c_str());
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    if (waited > timeout_ms) {
      broken_ = what + " did not complete within " + std::to_string(timeout_ms) + " ms";
      throw Error(ErrorCode::timeout, "rank " + std::to_string(rank_) + ": " + broken_ +
                                          " (does every rank make the same call?)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Every rank publishes its record through an all-gather and reads all of
// them; find_disagreement gives every rank the same verdict. The all-gather
// goes on the caller's stream, where this communicator's other NCCL work
// (decomposed's all-gather) is, so NCCL sees its operations in one order on
// one stream; the host then waits for that stream (bounded), which is why
// this happens once per distinct call only.
void NcclComm::agree(const core::CallRecord& mine, const std::exception_ptr& local_error,
                     std::int64_t timeout_ms, cudaStream_t stream) {
  const WireRecord encoded = encode(mine);
  const std::string key(encoded.begin(), encoded.end());
  if (mine.ok && agreed_calls_.count(key)) return;

  const cudaStream_t s = stream;
  char* device_records = static_cast<char*>(wire_.get());
  std::vector<WireRecord> all(static_cast<std::size_t>(world_));
  check_cuda(
      cudaMemcpyAsync(device_records, encoded.data(), kWireRecordBytes, cudaMemcpyHostToDevice, s),
      "cudaMemcpyAsync(agreement record)");
  check_nccl(ncclAllGather(device_records, device_records + kWireRecordBytes, kWireRecordBytes,
                           ncclUint8, comm_, s),
             "ncclAllGather(agreement records)", comm_);
  check_cuda(cudaMemcpyAsync(all.data(), device_records + kWireRecordBytes,
                             kWireRecordBytes * all.size(), cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync(agreement records back)");
  check_cuda(cudaEventRecord(agreed_.get(), s), "cudaEventRecord(agreed)");
  wait_for_event(agreed_.get(), timeout_ms, "the agreement all-gather");

  std::vector<core::CallRecord> records;
  for (const WireRecord& wire : all) records.push_back(decode(wire));
  const std::string disagreement = core::find_disagreement(records);
  if (!disagreement.empty()) {
    if (local_error) std::rethrow_exception(local_error);
    throw Error(ErrorCode::mismatch, disagreement);
  }
  agreed_calls_.insert(key);
  if (core::log_enabled(core::LogLevel::info)) {
    core::log(core::LogLevel::info, rank_,
              mine.problem.to_string() + " -> " + to_string(mine.plan.algorithm) + ": " +
                  mine.plan.reason);
  }
}

RunInfo NcclComm::fused_all_gather_matmul(const TensorView& a_shard, const TensorView& b,
                                          const TensorView& c_out, const TensorView* a_gathered_out,
                                          const Options& options) {
  check_usable();
  const double call_begin = options.trace ? options.trace->now_us() : 0;

  // 1. Check locally; the outcome is published even on failure.
  core::CallRecord mine;
  mine.world_size = world_;
  std::exception_ptr local_error;
  gpu::CheckedCall checked;
  try {
    checked = check_call(a_shard, b, c_out, a_gathered_out, options);
    mine.problem = checked.problem;
    mine.plan = checked.plan;
    mine.ok = true;
  } catch (const Error& e) {
    local_error = std::current_exception();
    mine.error = e.what();
  }
  const std::int64_t timeout_ms =
      mine.ok ? checked.resolved.wait_timeout_ms : core::kDefaultWaitTimeoutMs;

  // 2. Agree, once per distinct call (a host round trip: not inside a capture).
  const WireRecord encoded = encode(mine);
  const bool known = mine.ok && agreed_calls_.count(std::string(encoded.begin(), encoded.end()));
  if (!known && checked.capturing) {
    gpu::fail_argument("options.stream",
                       "is capturing a CUDA graph, but the ranks have not yet agreed on this "
                       "call (a host round trip); make the same call once uncaptured first");
  }
  if (local_error) {
    // Inside a capture no host round trip is possible: report the local
    // error at once (the peers' calls were refused for the same reason, or
    // will time out at their first barrier).
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(static_cast<cudaStream_t>(options.stream), &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
      std::rethrow_exception(local_error);
    }
    (void)cudaGetLastError();
  }
  agree(mine, local_error, timeout_ms, static_cast<cudaStream_t>(options.stream));
  if (local_error) std::rethrow_exception(local_error);

  // 3. Resources (collective growth: every rank agreed on the same sizes).
  gpu::CallSpec spec;
  spec.problem = checked.problem;
  spec.plan = checked.plan;
  spec.b = b;
  spec.c_out = c_out;
  spec.stream = static_cast<cudaStream_t>(options.stream);
  spec.capturing = checked.capturing;
  spec.timeout_ms = checked.resolved.wait_timeout_ms;
  spec.arrival_order = gpu::arrival_order(world_, rank_, options.hooks);
  spec.dropped.assign(static_cast<std::size_t>(world_), false);
  for (int c : spec.arrival_order) {
    spec.dropped[static_cast<std::size_t>(c)] = options.hooks.drop && options.hooks.drop(rank_, c);
  }
  spec.pieces = checked.pieces;
  if (checked.kernel) spec.native_kernel = checked.kernel->name;
  const std::size_t gathered_bytes = spec.chunk_bytes() * static_cast<std::size_t>(world_);
  const bool decomposed =
      spec.plan.algorithm != Algorithm::native && spec.plan.algorithm != Algorithm::pipelined;
  if (decomposed) {
    if (a_gathered_out) {
      spec.gathered = a_gathered_out->data;
    } else {
      if (checked.capturing && res_.gathered.size() < gathered_bytes) {
        gpu::fail_argument("options.stream",
                           "is capturing a CUDA graph, but this call would first have to "
                           "allocate its gathered buffer; make the same call once uncaptured "
                           "first (or pass a_gathered_out)");
      }
      spec.gathered = res_.gathered.ensure(gathered_bytes, "cudaMalloc(gathered A)");
    }
    if (checked.capturing && !gpu::gemm_ready(backend_, Algorithm::decomposed)) {
      gpu::fail_argument("options.stream",
                         "is capturing a CUDA graph, but cuBLAS is not set up yet on this "
                         "rank; make the same call once uncaptured first");
    }
  } else {
    if (workspace_.gathered_capacity() < gathered_bytes || !workspace_.gathered()) {
      if (checked.capturing) {
        gpu::fail_argument("options.stream",
                           "is capturing a CUDA graph, but the symmetric workspace must grow "
                           "first (collective); make the same call once uncaptured first");
      }
      synchronize();  // nothing of ours may still use the old workspace
      workspace_.ensure(gathered_bytes);
    }
    if (workspace_.generation() != workspace_generation_seen_) {
      // New memory, zeroed sync areas: barrier generations restart at 0.
      check_cuda(cudaMemset(barrier_state_.get(), 0, sizeof(std::uint32_t)),
                 "cudaMemset(barrier generation)");
      workspace_generation_seen_ = workspace_.generation();
    }
    spec.gathered = workspace_.gathered();
    if (spec.plan.algorithm == Algorithm::pipelined && checked.capturing &&
        !gpu::gemm_ready(backend_, Algorithm::pipelined)) {
      gpu::fail_argument("options.stream",
                         "is capturing a CUDA graph, but cuBLAS is not set up yet on this "
                         "rank; make the same call once uncaptured first");
    }
  }
  epoch_ = core::next_epoch(epoch_);
  spec.epoch = epoch_;

  NcclCallContext context;
  context.comm = comm_;
  context.workspace = &workspace_;
  context.a_shard = a_shard.data;
  context.a_gathered_out = a_gathered_out ? a_gathered_out->data : nullptr;
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
  context.barrier.timeout_ns = static_cast<std::uint64_t>(2 * spec.timeout_ms + 1000) * 1'000'000u;
  context.backend = &backend_;

  // 4. Enqueue. A failure here leaves the ranks' device work out of step.
  try {
    enqueue_nccl_call(spec, context, res_);
  } catch (const Error& e) {
    broken_ = std::string("enqueue failed: ") + e.what();
    throw;
  }
  if (!checked.capturing) {
    check_cuda(cudaEventRecord(res_.call_done.get(), spec.stream), "cudaEventRecord(call done)");
    pending_ = true;
  }
  pending_timeout_ms_ = spec.timeout_ms;
  pending_epoch_ = spec.epoch;
  pending_pieces_ = spec.pieces;
  if (options.trace) {
    options.trace->add_span(
        rank_, "host enqueue", "call",
        std::string("check, agree and enqueue (") + to_string(checked.plan.algorithm) + ")",
        call_begin, options.trace->now_us(), "\"epoch\": " + std::to_string(epoch_));
  }
  return gpu::to_run_info(checked.plan);
}

void NcclComm::synchronize() {
  check_cuda(cudaSetDevice(backend_.device()), "cudaSetDevice(rank device)");
  if (pending_) {
    // The kernel's waits and both barriers are bounded; this bounds the rest.
    const std::int64_t bound_ms = 6 * pending_timeout_ms_ + 10'000;
    wait_for_event(res_.call_done.get(), bound_ms,
                   "the device work of the call of epoch " + std::to_string(pending_epoch_));
    pending_ = false;
  }
  // The native kernel's gate and the barrier leave their first timeout here
  // (graph replays included); reading clears them.
  std::uint32_t gate[3] = {0, 0, 0};
  std::uint32_t barrier[3] = {0, 0, 0};
  const cudaStream_t s = res_.copy_out.get();
  check_cuda(cudaMemcpyAsync(gate, res_.error_words.get(), sizeof gate, cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync(error words)");
  auto* state = static_cast<std::uint32_t*>(barrier_state_.get());
  check_cuda(cudaMemcpyAsync(barrier, state + 1, sizeof barrier, cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync(barrier error words)");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize(error words)");
  if (gate[0] == 0 && barrier[0] == 0) return;
  check_cuda(cudaMemsetAsync(res_.error_words.get(), 0, sizeof gate, s), "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(state + 1, 0, sizeof barrier, s), "cudaMemsetAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize(error words)");
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
                  backend_.native_error_message(
                      gate, static_cast<std::uint64_t>(pending_timeout_ms_) * 1'000'000u));
}

}  // namespace asynctp::nccl
