// LoopbackComm's fused_matmul_reduce_scatter: the workspace every rank
// publishes before any rank enqueues, then the schedule of
// gpu/reduce_scatter_enqueue.hpp enqueued rank after rank. With real
// shipping (the pcie link) every rank enqueues its products before any rank
// enqueues its reduction, so that in a FIFO hardware queue the copies and
// flag writes a reduction waits for are ahead of it; the arrival model has
// no wait across ranks and enqueues each rank's whole call in its turn (so
// serialize_ranks can chain whole calls).
#include <algorithm>
#include <exception>
#include <string>

#include "asynctp/error.hpp"
#include "core/signals.hpp"
#include "gpu/check.hpp"
#include "gpu/link.hpp"
#include "gpu/loopback_comm.hpp"
#include "gpu/reduce_scatter_enqueue.hpp"

namespace asynctp::gpu {

bool LoopbackComm::peers_placed() const {
  return group_.config.link == loopback::Link::arrival || group_.config.serialize_ranks;
}

void LoopbackComm::prepare_rs_workspace(const CheckedCall& checked) {
  const core::ProblemDesc& p = checked.problem;
  const std::size_t partial = std::max<std::size_t>(partial_bytes(p), 1);
  const std::size_t slots = std::max<std::size_t>(slots_bytes(p), 1);
  const std::size_t flags = sizeof(std::uint32_t) * static_cast<std::size_t>(p.world_size);
  const std::size_t sum = std::max<std::size_t>(reduce_sum_bytes(p), 1);
  // A modelled call computes the peers' partials with the library GEMM
  // whatever the call's algorithm.
  const bool modelled = peers_placed();
  const bool gemms_ready = gemm_ready(*backend_, checked.plan.algorithm) &&
                           (!modelled || gemm_ready(*backend_, Algorithm::decomposed));
  // Over PCIe a rank stages every chunk it ships in its bounce, as many
  // bytes as its whole partial; the arrival model's delays need nothing.
  const bool pcie = group_.config.link == loopback::Link::pcie;
  if (checked.capturing && (res_.partial.size() < partial || res_.slots.size() < slots ||
                            res_.slot_flags.size() < flags || res_.reduce_sum.size() < sum ||
                            res_.reduce_verdict.size() < sizeof(std::uint32_t) || !gemms_ready ||
                            (pcie && !link_ready(Link::pcie, partial, res_)))) {
    fail_argument("options.stream",
                  "is capturing a graph, but this call would first have to allocate its "
                  "workspace or library GEMM handle; make the same call once uncaptured first");
  }
  if (pcie) prepare_link(Link::pcie, p.world_size, partial, res_);
  prepare_gemm(*backend_, checked.plan.algorithm);
  if (modelled) prepare_gemm(*backend_, Algorithm::decomposed);
  res_.partial.ensure(partial, "device allocation (reduce-scatter partial)");
  res_.slots.ensure(slots, "device allocation (reduce-scatter receive slots)");
  res_.reduce_sum.ensure(sum, "device allocation (reduce-scatter fp32 sum)");
  res_.reduce_verdict.ensure(sizeof(std::uint32_t), "device allocation (reduction verdict)");
  if (res_.slot_flags.size() < flags) {
    res_.slot_flags.ensure(flags, "device allocation (reduce-scatter slot flags)");
    gpu::check(rt::device_memset(res_.slot_flags.get(), 0, res_.slot_flags.size()),
               "device memset (reduce-scatter slot flags)");
  }
  group_.receive[static_cast<std::size_t>(rank_)] = {
      res_.slots.get(), static_cast<std::uint32_t*>(res_.slot_flags.get())};
}

ReduceScatterSpec LoopbackComm::make_rs_spec(const CheckedCall& checked, const core::OpCall& call,
                                             const Options& options) {
  ReduceScatterSpec spec;
  spec.problem = checked.problem;
  spec.plan = checked.plan;
  if (checked.kernel) spec.native_kernel = checked.kernel->name;
  spec.link = group_.config.link == loopback::Link::arrival ? Link::arrival : Link::pcie;
  spec.link_gbps = group_.config.link_gbps;
  spec.modelled = peers_placed();
  spec.a = call.a;
  spec.b = call.b;
  spec.out = call.out;
  for (const core::OpCall& peer : group_.calls) {
    spec.all_a.push_back(peer.a);
    spec.all_b.push_back(peer.b);
  }
  spec.owners = group_.receive;
  spec.owner_reduced.assign(group_.reduced.size(), nullptr);
  if (!checked.capturing) spec.owner_reduced = group_.reduced;
  spec.partial = res_.partial.get();
  spec.mine = group_.receive[static_cast<std::size_t>(rank_)];
  spec.stream = static_cast<rt::StreamHandle>(options.stream);
  spec.capturing = checked.capturing;
  spec.timeout_ms = checked.resolved.wait_timeout_ms;
  spec.pieces = checked.pieces;
  epoch_ = core::next_epoch(epoch_);
  spec.epoch = epoch_;
  return spec;
}

std::uint32_t LoopbackComm::execute_reduce_scatter(const core::OpCall& call,
                                                   const CheckedCall& checked,
                                                   const Options& options) {
  const int world = group_.config.world_size;
  const std::int64_t timeout_ms = checked.resolved.wait_timeout_ms;
  RankEvents& mine_events = *group_.events[static_cast<std::size_t>(rank_)];
  const rt::StreamHandle stream = static_cast<rt::StreamHandle>(options.stream);
  const bool modelled = peers_placed();
  pending_reduce_scatter_ = true;

  // 1. Every rank's receive side exists before anyone ships into it.
  prepare_every_rank(checked, call, options, timeout_ms);
  std::exception_ptr enqueue_error;
  ReduceScatterSpec spec = make_rs_spec(checked, call, options);

  // 2. Products (and, modelled, the whole call) rank after rank.
  for (int turn = 0; turn < world; ++turn) {
    if (turn == rank_) {
      try {
        mine_events.reads_done_recorded = false;
        if (group_.config.serialize_ranks && group_.chain_recorded) {
          gpu::check(rt::stream_wait_event(stream, group_.chain.get()),
                     "stream wait (previous rank's call)");
        }
        if (!checked.capturing && modelled) {
          // The model reads the peers' A and B.
          wait_for_peers(stream, &RankEvents::shard_ready, &RankEvents::shard_ready_recorded,
                         "stream wait (peer inputs ready)");
        }
        res_.trace.start(traced(checked, options) ? options.trace : nullptr, rank_,
                         res_.copy_in.get());
        enqueue_rs_products(spec, res_, *backend_);
        if (!checked.capturing) {
          gpu::check(rt::event_record(mine_events.reads_done.get(), stream),
                     "event record (reads done)");
          mine_events.reads_done_recorded = true;
        }
        if (modelled) {
          enqueue_rs_reduction(spec, res_);
          if (group_.config.serialize_ranks) {
            gpu::check(rt::event_record(group_.chain.get(), stream), "event record (chain)");
            group_.chain_recorded = true;
          }
        }
      } catch (...) {
        enqueue_error = std::current_exception();
      }
    }
    group_.barrier.arrive_and_wait(rank_, "enqueue", timeout_ms);
  }
  // 3. Real shipping: the reductions, after every rank's products.
  if (!modelled) {
    for (int turn = 0; turn < world; ++turn) {
      if (turn == rank_ && !enqueue_error) {
        try {
          enqueue_rs_reduction(spec, res_);
        } catch (...) {
          enqueue_error = std::current_exception();
        }
      }
      group_.barrier.arrive_and_wait(rank_, "enqueue reduction", timeout_ms);
    }
  }
  if (!checked.capturing && !enqueue_error) {
    group_.reduced[static_cast<std::size_t>(rank_)] = res_.reduced.get();
    timed_call_enqueued_ = true;
    timed_call_done_ = false;
  }
  pending_timeout_ms_ = spec.timeout_ms;
  pending_epoch_ = spec.epoch;
  pending_pieces_ = 1;

  // The caller may overwrite its A and B once its stream moves on: with the
  // arrival model the peers read them too.
  finish_enqueue(stream, checked.capturing, modelled, enqueue_error);
  return epoch_;
}

}  // namespace asynctp::gpu
