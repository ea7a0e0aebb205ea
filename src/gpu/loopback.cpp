// The loopback transport: W virtual ranks on one GPU (asynctp/loopback.hpp),
// over the runtime this library was built for (gpu/rank_backend.hpp). The
// group makes the ranks, runs and times them; each rank's communicator
// (gpu/loopback_comm.hpp) checks, agrees on and enqueues its calls.
#include "asynctp/loopback.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "core/lookup.hpp"
#include "core/rank_threads.hpp"
#include "core/schedule.hpp"
#include "core/signals.hpp"
#include "core/tuning.hpp"
#include "core/validate.hpp"
#include "gpu/call_check.hpp"
#include "gpu/check.hpp"
#include "gpu/enqueue_call.hpp"
#include "gpu/link.hpp"
#include "gpu/loopback_comm.hpp"
#include "gpu/loopback_state.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/reduce_scatter_enqueue.hpp"
#include "gpu/runtime.hpp"
#include "gpu/runtime_backend.hpp"

namespace asynctp::gpu {

LoopbackComm::LoopbackComm(LoopbackState& group, int rank, std::unique_ptr<RankBackend> backend)
    : group_(group), rank_(rank), res_(group.config.world_size) {
  backend_ = std::move(backend);
  // The group's benchmark times a call as the mean over its ranks' spans
  // (time_calls); the measured choice ranks its candidates the same way.
  tuner().set_group_time(core::GroupTime::mean_over_ranks);
}

CallSite LoopbackComm::site() const {
  CallSite site;
  site.world_size = group_.config.world_size;
  site.rank = rank_;
  const bool arrival = group_.config.link == loopback::Link::arrival;
  site.link.kind = arrival ? core::LinkFacts::Kind::arrival : core::LinkFacts::Kind::pcie;
  site.link.gbps = arrival ? group_.config.link_gbps : 0;  // pcie: the device's measured figure
  return site;
}

void LoopbackComm::check_own_rules(const core::OpCall& call, const CheckedCall& checked) const {
  const bool pcie_peers = group_.config.link == loopback::Link::pcie && world_size() > 1;
  if (call.op == core::OpKind::matmul_reduce_scatter && checked.capturing && pcie_peers) {
    throw Error(ErrorCode::unsupported,
                "options.stream: is capturing a graph, but fused_matmul_reduce_scatter over the "
                "pcie link makes each rank's reduction wait on its peers' copies, and separate "
                "graphs cannot be ordered for shared hardware queues (a replay's wait could "
                "hold a queue its peers' copies sit behind); capture with Link::arrival, whose "
                "ranks never wait on each other");
  }
  if (checked.capturing && group_.config.serialize_ranks) {
    fail_argument("options.stream",
                  "is capturing a graph, but LoopbackConfig::serialize_ranks orders the "
                  "ranks' streams through each other, which separate captures cannot hold");
  }
}

CallSpec LoopbackComm::make_spec(const CheckedCall& checked, const core::OpCall& call,
                                 const Options& options) {
  const TensorView* a_gathered_out = call.a_gathered_out;
  CallSpec spec = call_spec(checked, call, options);
  spec.link = group_.config.link == loopback::Link::arrival ? Link::arrival : Link::pcie;
  spec.link_gbps = group_.config.link_gbps;
  for (const core::CallRecord& record : group_.records) spec.shards.push_back(record.shard.data);
  // Grown by prepare_every_rank before any rank enqueued.
  spec.gathered = a_gathered_out ? a_gathered_out->data : res_.gathered.get();
  spec.gathered_is_output = a_gathered_out != nullptr;
  spec.local_chunk_in_place =
      checked.plan.algorithm == Algorithm::pipelined ||
      (checked.plan.algorithm == Algorithm::native && backend_->native_reads_local_shard());
  epoch_ = core::next_epoch(epoch_);
  spec.epoch = epoch_;
  return spec;
}

void LoopbackComm::prepare_all_gather_workspace(const CheckedCall& checked,
                                                const core::OpCall& call) {
  const std::size_t gathered = gathered_bytes(checked.problem);
  const Link link = group_.config.link == loopback::Link::arrival ? Link::arrival : Link::pcie;
  if (checked.capturing) {
    // Allocation and thread creation cannot happen inside a capture.
    const bool gathered_ready = call.a_gathered_out || res_.gathered.size() >= gathered;
    if (!gathered_ready || !link_ready(link, gathered, res_) ||
        !gemm_ready(*backend_, checked.plan.algorithm, checked.plan.native_tail)) {
      fail_argument("options.stream",
                    "is capturing a graph, but this call would first have to allocate its "
                    "workspace, clock or library GEMM handle; make the same call once uncaptured "
                    "first (or pass a_gathered_out)");
    }
  }
  if (!call.a_gathered_out) res_.gathered.ensure(gathered, "device allocation (gathered A)");
  prepare_link(link, checked.problem.world_size, gathered, res_);
  prepare_gemm(*backend_, checked.plan.algorithm, checked.plan.native_tail);
}

void LoopbackComm::prepare_every_rank(const CheckedCall& checked, const core::OpCall& call,
                                      const Options& options, std::int64_t timeout_ms) {
  std::exception_ptr error;
  char& ok = group_.workspace_ok[static_cast<std::size_t>(rank_)];
  ok = 0;
  try {
    if (call.op == core::OpKind::matmul_reduce_scatter) {
      prepare_rs_workspace(checked);
    } else {
      prepare_all_gather_workspace(checked, call);
    }
    if (traced(checked, options)) {
      const int world = checked.problem.world_size;
      res_.trace.prepare(DeviceTrace::marks_for(world, kMaxSignalPieces), world * kMaxSignalPieces);
    }
    ok = 1;
  } catch (...) {
    error = std::current_exception();
  }
  group_.barrier.arrive_and_wait(rank_, "workspace", timeout_ms);
  if (error) std::rethrow_exception(error);
  for (int p = 0; p < group_.config.world_size; ++p) {
    if (!group_.workspace_ok[static_cast<std::size_t>(p)]) {
      throw Error(ErrorCode::backend, "rank " + std::to_string(p) +
                                          " could not prepare its workspace; nothing was "
                                          "enqueued");
    }
  }
}

void LoopbackComm::agree(core::CallRecord& mine, std::exception_ptr& local_error,
                         const call::CheckedCall& checked, const core::OpCall& call,
                         const Options& options, std::int64_t timeout_ms) {
  RankEvents& mine_events = *group_.events[static_cast<std::size_t>(rank_)];
  mine_events.shard_ready_recorded = false;
  if (mine.ok && !checked.capturing) {
    // The shard's writers are the caller's earlier work on its stream.
    try {
      gpu::check(rt::event_record(mine_events.shard_ready.get(),
                                  static_cast<rt::StreamHandle>(options.stream)),
                 "event record (shard ready)");
      mine_events.shard_ready_recorded = true;
    } catch (const Error& e) {
      core::record_local_failure(mine, local_error, e.what());
    }
  }
  core::OpCall published = call;
  published.a_gathered_out = nullptr;  // the caller's, valid during this call only
  group_.calls[static_cast<std::size_t>(rank_)] = published;
  core::publish_and_agree(group_.barrier, group_.records, mine, rank_, timeout_ms, local_error);
}

std::uint32_t LoopbackComm::execute(const core::OpCall& call, const call::CheckedCall& checked,
                                    const Options& options) {
  if (call.op == core::OpKind::matmul_reduce_scatter) {
    return execute_reduce_scatter(call, checked, options);
  }
  pending_reduce_scatter_ = false;
  const int world = group_.config.world_size;
  const std::int64_t timeout_ms = checked.resolved.wait_timeout_ms;
  RankEvents& mine_events = *group_.events[static_cast<std::size_t>(rank_)];
  const rt::StreamHandle stream = static_cast<rt::StreamHandle>(options.stream);

  prepare_every_rank(checked, call, options, timeout_ms);

  // Enqueue one rank after another, so that in every hardware queue the work
  // a wait depends on is ahead of the wait (enqueue_call.cpp).
  std::exception_ptr enqueue_error;
  for (int turn = 0; turn < world; ++turn) {
    if (turn == rank_) {
      try {
        mine_events.reads_done_recorded = false;
        CallSpec spec = make_spec(checked, call, options);
        if (group_.config.serialize_ranks && group_.chain_recorded) {
          gpu::check(rt::stream_wait_event(stream, group_.chain.get()),
                     "stream wait (previous rank's call)");
        }
        if (!checked.capturing) {
          wait_for_peers(stream, &RankEvents::shard_ready, &RankEvents::shard_ready_recorded,
                         "stream wait (peer shard ready)");
        }
        res_.trace.start(traced(checked, options) ? options.trace : nullptr, rank_,
                         res_.copy_in.get());
        enqueue_call(spec, res_, *backend_);
        if (!checked.capturing) {
          timed_call_enqueued_ = true;
          timed_call_done_ = false;
        }
        pending_timeout_ms_ = spec.timeout_ms;
        pending_epoch_ = spec.epoch;
        pending_pieces_ = spec.pieces;
        if (!checked.capturing) {
          gpu::check(rt::event_record(mine_events.reads_done.get(), stream),
                     "event record (reads done)");
          mine_events.reads_done_recorded = true;
        }
        if (group_.config.serialize_ranks) {
          gpu::check(rt::event_record(group_.chain.get(), stream), "event record (chain)");
          group_.chain_recorded = true;
        }
      } catch (...) {
        enqueue_error = std::current_exception();
      }
    }
    group_.barrier.arrive_and_wait(rank_, "enqueue", timeout_ms);
  }

  // The caller may overwrite its shard once its stream moves on: the stream
  // waits until every peer has read it. synchronize() waits for that point
  // too: then the shard is free.
  finish_enqueue(stream, checked.capturing, true, enqueue_error);
  return epoch_;
}

void LoopbackComm::wait_for_peers(rt::StreamHandle stream, Event RankEvents::*event,
                                  bool RankEvents::*recorded, const char* what) const {
  for (int p = 0; p < group_.config.world_size; ++p) {
    const RankEvents& peer = *group_.events[static_cast<std::size_t>(p)];
    if (p != rank_ && peer.*recorded) {
      gpu::check(rt::stream_wait_event(stream, (peer.*event).get()), what);
    }
  }
}

bool LoopbackComm::traced(const CheckedCall& checked, const Options& options) {
  return options.trace != nullptr && !checked.capturing;
}

void LoopbackComm::finish_enqueue(rt::StreamHandle stream, bool capturing, bool peers_read_inputs,
                                  std::exception_ptr enqueue_error) {
  if (!capturing && !enqueue_error) {
    try {
      if (peers_read_inputs) {
        wait_for_peers(stream, &RankEvents::reads_done, &RankEvents::reads_done_recorded,
                       "stream wait (peer reads done)");
      }
      gpu::check(rt::event_record(res_.call_done.get(), stream), "event record (call done)");
      pending_ = true;
    } catch (...) {
      enqueue_error = std::current_exception();
    }
  }
  if (enqueue_error) {
    res_.trace.abandon();  // what it recorded never ran as a whole call
    std::rethrow_exception(enqueue_error);
  }
}

void LoopbackComm::synchronize() {
  gpu::check(rt::set_device(group_.config.device), "set device (group device)");
  if (pending_) {
    // A serialized rank also waits for the ranks before it.
    const std::int64_t bound_ms =
        (static_cast<std::int64_t>(group_.config.world_size) + 1) * pending_timeout_ms_ + 10'000;
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      const rt::Status q = rt::event_query(res_.call_done.get());
      if (q == rt::kSuccess) break;
      if (q != rt::kNotReady) gpu::check(q, "device work of the last call");
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      if (waited > bound_ms) {
        throw Error(ErrorCode::timeout, "synchronize: rank " + std::to_string(rank_) +
                                            "'s call (epoch " + std::to_string(pending_epoch_) +
                                            ") is still running on the device after " +
                                            std::to_string(waited) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    pending_ = false;
    if (timed_call_enqueued_) {
      timed_call_done_ = true;
      timed_call_enqueued_ = false;
    }
  }
  // A traced call's device spans, now that it is done (gpu/device_trace.hpp).
  res_.trace.collect(res_.copy_in.get());
  // The native kernel's gate leaves the first timed-out chunk here (graph
  // replays included); reading clears it.
  std::uint32_t words[3] = {0, 0, 0};
  const rt::StreamHandle s = res_.copy_in.get();
  gpu::check(
      rt::memcpy_async(words, res_.error_words.get(), sizeof words, rt::Copy::device_to_host, s),
      "copy (error words)");
  gpu::check(rt::stream_synchronize(s), "stream synchronize (error words)");
  if (words[0] == 0) return;
  gpu::check(rt::memset_async(res_.error_words.get(), 0, sizeof words, s), "memset (error words)");
  gpu::check(rt::stream_synchronize(s), "stream synchronize (error words)");
  if (pending_reduce_scatter_) {
    // The reduction's wait: [0] = 1 + the receive slot that never filled.
    const int world = group_.config.world_size;
    const int source = core::partial_source(world, rank_, static_cast<int>(words[0]) - 1);
    throw Error(
        ErrorCode::timeout,
        "rank " + std::to_string(rank_) + ": " +
            core::partial_timeout_message(rank_, source, words[1], words[2], pending_timeout_ms_));
  }
  words[0] = chunk_word_of_piece_word(words[0], pending_pieces_);
  throw Error(ErrorCode::timeout,
              "rank " + std::to_string(rank_) + ": " +
                  backend_->native_error_message(
                      words, static_cast<std::uint64_t>(pending_timeout_ms_) * 1'000'000u));
}

double LoopbackComm::last_call_ms() const {
  if (!timed_call_done_) {
    throw Error(ErrorCode::invalid_argument,
                "rank: rank " + std::to_string(rank_) +
                    " has no uncaptured call that asynctp::synchronize saw finish");
  }
  float ms = 0;
  gpu::check(rt::event_elapsed_ms(&ms, res_.call_begin.get(), res_.call_end.get()),
             "event elapsed time (call begin, call end)");
  return ms;
}

}  // namespace asynctp::gpu

namespace asynctp::loopback {
namespace {

constexpr int kMaxWorldSize = 64;  // virtual ranks share one GPU's memory

void check_config(const LoopbackConfig& config) {
  if (config.world_size < 1 || config.world_size > kMaxWorldSize) {
    throw Error(ErrorCode::invalid_argument, "world_size: must lie in [1, " +
                                                 std::to_string(kMaxWorldSize) + "], got " +
                                                 std::to_string(config.world_size));
  }
  if (config.device < 0) {
    throw Error(ErrorCode::invalid_argument,
                "device: must be a GPU ordinal >= 0, got " + std::to_string(config.device));
  }
  if (config.link == Link::arrival && !(std::isfinite(config.link_gbps) && config.link_gbps > 0)) {
    throw Error(ErrorCode::invalid_argument,
                "link_gbps: must be a positive number of GB/s for Link::arrival, got " +
                    std::to_string(config.link_gbps));
  }
}

constexpr core::Entry<Link, const char*> kLinkNames[] = {{Link::pcie, "pcie"},
                                                         {Link::arrival, "arrival"}};

}  // namespace

const char* to_string(Link link) noexcept { return core::lookup(kLinkNames, link, "?"); }

Link parse_link(const std::string& text, const std::string& what) {
  if (const auto link = core::key_named(kLinkNames, text)) return *link;
  throw Error(ErrorCode::invalid_argument, what + ": must be pcie or arrival, got '" + text + "'");
}

std::string unavailable_reason(int device) { return gpu::runtime_unavailable_reason(device); }

struct LoopbackGroup::State {
  explicit State(const LoopbackConfig& config) : shared(config) {
    for (int r = 0; r < config.world_size; ++r) {
      comms.push_back(
          std::make_unique<gpu::LoopbackComm>(shared, r, gpu::make_rank_backend(config.device)));
    }
  }
  gpu::LoopbackState shared;
  std::vector<std::unique_ptr<gpu::LoopbackComm>> comms;
};

LoopbackGroup::LoopbackGroup(const LoopbackConfig& config) {
  check_config(config);
  const std::string why = unavailable_reason(config.device);
  if (!why.empty()) {
    throw Error(ErrorCode::backend,
                std::string("loopback group on ") + gpu::rt::kName + " device: " + why);
  }
  gpu::check(gpu::rt::set_device(config.device), "set device (LoopbackConfig::device)");
  state_ = std::make_unique<State>(config);
}

LoopbackGroup::~LoopbackGroup() {
  // Queued work may still use the ranks' buffers and streams.
  if (state_) (void)gpu::rt::device_synchronize();
}

int LoopbackGroup::world_size() const noexcept { return state_->shared.config.world_size; }

const LoopbackConfig& LoopbackGroup::config() const noexcept { return state_->shared.config; }

Comm& LoopbackGroup::comm(int rank) {
  core::check_rank_argument(rank, world_size());
  return *state_->comms[static_cast<std::size_t>(rank)];
}

double LoopbackGroup::last_call_ms(int rank) const {
  core::check_rank_argument(rank, world_size());
  return state_->comms[static_cast<std::size_t>(rank)]->last_call_ms();
}

std::vector<double> LoopbackGroup::time_calls(int iterations, const RankCall& call,
                                              const BeforeIteration& before,
                                              const std::vector<void*>& streams) {
  (void)streams;  // each rank's span is recorded by its communicator
  const int world = world_size();
  const std::size_t count = static_cast<std::size_t>(std::max(iterations, 0));
  // spans[i][r]: rank r's call of iteration i.
  std::vector<std::vector<double>> spans(count,
                                         std::vector<double>(static_cast<std::size_t>(world)));
  // The calls run back to back, as a rank's calls do in a model's step: a
  // wait after each would start the next on an idle device, and its span
  // would then hold the host's enqueue of it. Each call's span goes into a
  // slot of the rank's clock of its own, above the measured choice's; the
  // spans are read after every kWindow calls (one wait each), so that the
  // slots, two events each, stay few however many calls are timed.
  constexpr std::size_t kWindow = 64;
  const auto slot_of = [](std::size_t i) {
    return core::kTimedCallSlots + static_cast<int>(i % kWindow);
  };
  // Between iterations, so that no rank starts iteration i + 1 while rank 0
  // still reports iteration i.
  std::barrier<> iteration_start(world);
  run([&](Comm& comm) {
    const int r = comm.rank();
    gpu::LoopbackComm& rank_comm = *state_->comms[static_cast<std::size_t>(r)];
    const auto read_spans = [&](std::size_t first, std::size_t end) {
      comm.synchronize();
      for (std::size_t i = first; i < end; ++i) {
        const std::optional<double> ms = rank_comm.timed_call_ms(slot_of(i), /*wait=*/true);
        if (!ms) {
          throw Error(ErrorCode::backend, "rank " + std::to_string(r) + ": iteration " +
                                              std::to_string(i) +
                                              " recorded no span (a captured call?)");
        }
        spans[i][static_cast<std::size_t>(r)] = *ms;
      }
    };
    try {
      std::size_t unread = 0;
      for (std::size_t i = 0; i < count; ++i) {
        iteration_start.arrive_and_wait();
        if (r == 0 && before) before(static_cast<int>(i), std::nullopt);
        rank_comm.time_next_call(slot_of(i));
        call(comm, static_cast<int>(i));
        if (i + 1 - unread == kWindow) {
          read_spans(unread, i + 1);
          unread = i + 1;
        }
      }
      read_spans(unread, count);
    } catch (...) {
      // A failing rank must not leave the others waiting at the barrier;
      // their next collective call then fails within the wait timeout.
      iteration_start.arrive_and_drop();
      rank_comm.time_next_call(-1);
      throw;
    }
  });
  std::vector<double> ms(count);
  for (std::size_t i = 0; i < count; ++i) {
    double sum = 0;
    for (double span : spans[i]) sum += span;
    ms[i] = sum / world;
  }
  return ms;
}

void LoopbackGroup::enter_rank_thread(int) {
  gpu::check(gpu::rt::set_device(state_->shared.config.device), "set device (group device)");
}

}  // namespace asynctp::loopback
