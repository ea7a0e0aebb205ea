// The public ops and the one call flow they all take, whatever the
// communicator: each entry point (asynctp/ops.hpp) builds its op's call
// (core::OpCall) and runs it through check, agree and execute on the
// communicator's transport (call/transport.hpp). A verify problem's call
// (asynctp/verify.hpp) is its op's entry point on the rank's tensors, so it is
// written here too: the caller meets the call flow at once.
#include "call/collective.hpp"

#include <exception>
#include <optional>
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "asynctp/trace.hpp"
#include "asynctp/verify.hpp"
#include "core/config.hpp"
#include "core/planner.hpp"

namespace asynctp::call {
namespace {

RunInfo to_run_info(const core::Plan& plan) {
  const core::Prediction* predicted = core::prediction_of(plan, plan.algorithm);
  return {plan.algorithm, plan.tile_m, plan.tile_n, plan.reason, predicted ? predicted->ms : 0.0};
}

void trace_call(const Transport& transport, const core::OpCall& call, const CheckedCall& checked,
                const Options& options, std::uint32_t epoch_value, double begin_us) {
  if (!options.trace) return;
  const std::string algorithm = to_string(checked.plan.algorithm);
  const std::string epoch = "\"epoch\": " + std::to_string(epoch_value);
  if (transport.synchronous()) {
    options.trace->add_span(transport.rank(), "rank", "call",
                            std::string(core::op_name(call.op)) + " (" + algorithm + ")", begin_us,
                            options.trace->now_us(), epoch);
  } else {
    // Host side only: the device work runs after the call returns.
    options.trace->add_span(transport.rank(), "host enqueue", "call",
                            "check, agree and enqueue (" + algorithm + ")", begin_us,
                            options.trace->now_us(), epoch);
  }
}

// What the agreement decided beside the algorithm, onto this rank's plan:
// the reason and the measured choice's step for the call.
void take_agreed_decision(core::Plan& plan, const core::Plan& agreed) {
  plan.reason = agreed.reason;
  plan.tune = agreed.tune;
  plan.tune_runs = agreed.tune_runs;
}

// This rank's half of the call redone for the algorithm the group agreed on,
// when the ranks' planners chose differently: the transport's own check
// again, with that algorithm forced, so that everything it derives from the
// algorithm (the kernel, signal pieces, its own rules) follows. The
// algorithm is one this rank's record said it can run, so the check passes.
CheckedCall adopt_group_plan(const Transport& transport, const core::OpCall& call,
                             const Options& options, const CheckedCall& own,
                             const core::Plan& agreed) {
  Options forced = options;
  forced.algorithm = agreed.algorithm;
  CheckedCall adopted;
  try {
    adopted = transport.check(call, forced);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("rank ") + std::to_string(transport.rank()) +
                              ": the algorithm the ranks agreed on (" +
                              to_string(agreed.algorithm) +
                              ") failed this rank's check, which its record said it would "
                              "pass: " +
                              e.what());
  }
  adopted.resolved = own.resolved;
  take_agreed_decision(adopted.plan, agreed);
  adopted.plan.runnable = agreed.runnable;
  return adopted;
}

// Whether this call takes part in the measured choice: auto asked for it,
// and the call runs when it is made (a captured call runs at its replays).
bool tunes(const CheckedCall& checked) {
  return checked.resolved.tune && !checked.resolved.algorithm_forced && !checked.capturing;
}

// Reads the times of this rank's measuring calls that have finished, or
// (`wait`) waits for every one still running: a failure of that work is
// this call's error, and its times are lost (measured again).
void read_measurements(Transport& transport, bool wait) {
  core::CallTuner& tuner = transport.tuner();
  if (!tuner.awaiting()) return;
  try {
    tuner.read_times([&](int slot) { return transport.timed_call_ms(slot, wait); }, wait);
  } catch (...) {
    tuner.abandon();
    throw;
  }
}

// What this rank can run of `call`: its plan's algorithm and fallbacks,
// and every other algorithm whose check passes when forced (the planner
// offers the group native only where it planned native, but the measured
// choice may find it faster where the planner did not).
unsigned runnable_when_forced(const Transport& transport, const core::OpCall& call,
                              const Options& options, const CheckedCall& checked) {
  unsigned runnable = checked.plan.runnable;
  for (Algorithm a : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    if ((runnable & core::algorithm_bit(a)) != 0) continue;
    Options forced = options;
    forced.algorithm = a;
    try {
      (void)transport.check(call, forced);
      runnable |= core::algorithm_bit(a);
    } catch (const Error&) {
      // Not runnable here: not a candidate.
    }
  }
  return runnable;
}

// This rank's proposal for a tuned call: the times that have come in first,
// and every time of the problem where the group is to choose now.
core::TuneProposal propose_tuning(Transport& transport, const core::OpCall& call,
                                  const Options& options, const CheckedCall& checked) {
  core::CallTuner& tuner = transport.tuner();
  read_measurements(transport, false);
  if (tuner.waits_for_times(checked.problem)) read_measurements(transport, true);
  // The candidates are fixed at a problem's first call.
  const unsigned runnable = tuner.knows(checked.problem)
                                ? checked.plan.runnable
                                : runnable_when_forced(transport, call, options, checked);
  const core::TuneProposal proposal =
      tuner.propose(checked.problem, checked.plan.algorithm, runnable);
  // A measuring call needs a free slot; the wait for one belongs here,
  // before the agreement, where a failure reaches every rank.
  if (proposal.step == core::TuneStep::measure && !tuner.slot_free()) {
    read_measurements(transport, true);
  }
  return proposal;
}

// Runs or enqueues the agreed call; a measuring call is timed into a slot
// of the transport's clock (propose_tuning left one free).
std::uint32_t execute_call(Transport& transport, const core::OpCall& call,
                           const CheckedCall& checked, const Options& options) {
  if (checked.plan.tune != core::TuneAction::measure) {
    return transport.execute(call, checked, options);
  }
  core::CallTuner& tuner = transport.tuner();
  const std::optional<int> slot =
      tuner.start(checked.problem, checked.plan.algorithm, checked.plan.tune_runs);
  transport.time_next_call(slot.value_or(-1));
  try {
    return transport.execute(call, checked, options);
  } catch (...) {
    transport.time_next_call(-1);
    if (slot) tuner.cancel(*slot);
    throw;
  }
}

}  // namespace

RunInfo run_collective(Transport& transport, const core::OpCall& call, const Options& options) {
  transport.check_usable();
  const double begin_us = options.trace ? options.trace->now_us() : 0;

  // 1. Check locally. The outcome is published even when it failed, so that
  //    every rank learns of the failure and none waits for a rank that gave up.
  core::CallRecord mine;
  mine.world_size = transport.world_size();
  std::exception_ptr local_error;
  CheckedCall checked;
  try {
    checked = transport.check(call, options);
    mine.problem = checked.problem;
    mine.plan = checked.plan;
    mine.shard = call.a;
    if (tunes(checked)) {
      mine.tune = propose_tuning(transport, call, options, checked);
      // The group may run any candidate of this rank's: its record says so.
      mine.plan.runnable |= transport.tuner().candidate_bits(checked.problem);
    }
    mine.ok = true;
  } catch (const Error& e) {
    local_error = std::current_exception();
    mine.error = e.what();
  }
  const std::int64_t timeout_ms =
      mine.ok ? checked.resolved.wait_timeout_ms : core::kDefaultWaitTimeoutMs;

  // 2. Agree: every rank reads the same records and reaches the same verdict,
  //    and the same algorithm: where the planners chose differently (each
  //    plans from its own problem), mine.plan is now the group's.
  transport.agree(mine, local_error, checked, call, options, timeout_ms);
  if (local_error) std::rethrow_exception(local_error);
  if (mine.plan.algorithm != checked.plan.algorithm) {
    checked = adopt_group_plan(transport, call, options, checked, mine.plan);
  } else if (mine.plan.tune != core::TuneAction::none) {
    take_agreed_decision(checked.plan, mine.plan);
  }
  if (checked.plan.tune == core::TuneAction::kept) {
    // Every rank kept the same choice for the same reason: its times.
    const std::string why = transport.tuner().kept_reason(checked.problem);
    if (!why.empty()) checked.plan.reason = why;
  }

  // 3. Run or enqueue the op's schedule on this transport; a measured
  //    choice's call is timed (read at a later call), or its choice kept.
  const std::uint32_t epoch = execute_call(transport, call, checked, options);
  if (checked.plan.tune == core::TuneAction::choose) {
    transport.tuner().keep(checked.problem, checked.plan.algorithm, checked.plan.reason);
  }
  trace_call(transport, call, checked, options, epoch, begin_us);
  return to_run_info(checked.plan);
}

void reject_collective(Transport& transport, const Error& why) {
  transport.check_usable();
  core::CallRecord mine;
  mine.world_size = transport.world_size();
  mine.error = why.what();
  std::exception_ptr local_error = std::make_exception_ptr(why);
  // The transport reads the checked call only from a record that passed.
  try {
    transport.agree(mine, local_error, CheckedCall{}, core::OpCall{}, Options{},
                    core::kDefaultWaitTimeoutMs);
  } catch (const Error& e) {
    // The agreement rethrows this rank's own rejection: the peers were told.
    if (std::string(e.what()) != mine.error) throw;
  }
}

RunInfo plan_collective(const Transport& transport, const core::OpCall& call,
                        const Options& options) {
  return to_run_info(transport.check(call, options).plan);
}

Transport& transport_of(Comm& comm) {
  auto* transport = dynamic_cast<Transport*>(&comm);
  if (!transport) {
    throw Error(ErrorCode::invalid_argument,
                "comm: was not made by asynctp (use a group or communicator factory of "
                "asynctp/cpu.hpp, loopback.hpp or nccl.hpp)");
  }
  return *transport;
}

const Transport& transport_of(const Comm& comm) { return transport_of(const_cast<Comm&>(comm)); }

}  // namespace asynctp::call

namespace asynctp {
namespace {

core::OpCall all_gather_matmul_call(const TensorView& a_shard, const TensorView& b,
                                    const TensorView& c_out, const TensorView* a_gathered_out) {
  core::OpCall call;
  call.op = core::OpKind::all_gather_matmul;
  call.a = a_shard;
  call.b = b;
  call.out = c_out;
  call.a_gathered_out = a_gathered_out;
  return call;
}

core::OpCall matmul_reduce_scatter_call(const TensorView& a, const TensorView& b,
                                        const TensorView& out) {
  core::OpCall call;
  call.op = core::OpKind::matmul_reduce_scatter;
  call.a = a;
  call.b = b;
  call.out = out;
  return call;
}

}  // namespace

RunInfo fused_all_gather_matmul(Comm& comm, const TensorView& a_shard, const TensorView& b,
                                const TensorView& c_out, const TensorView* a_gathered_out,
                                const Options& options) {
  return call::run_collective(call::transport_of(comm),
                              all_gather_matmul_call(a_shard, b, c_out, a_gathered_out), options);
}

RunInfo fused_matmul_reduce_scatter(Comm& comm, const TensorView& a, const TensorView& b,
                                    const TensorView& out, const Options& options) {
  return call::run_collective(call::transport_of(comm), matmul_reduce_scatter_call(a, b, out),
                              options);
}

void synchronize(Comm& comm) { comm.synchronize(); }

RunInfo plan_fused_all_gather_matmul(const Comm& comm, const TensorView& a_shard,
                                     const TensorView& b, const TensorView& c_out,
                                     const TensorView* a_gathered_out, const Options& options) {
  return call::plan_collective(call::transport_of(comm),
                               all_gather_matmul_call(a_shard, b, c_out, a_gathered_out), options);
}

RunInfo plan_fused_matmul_reduce_scatter(const Comm& comm, const TensorView& a, const TensorView& b,
                                         const TensorView& out, const Options& options) {
  return call::plan_collective(call::transport_of(comm), matmul_reduce_scatter_call(a, b, out),
                               options);
}

namespace verify {
namespace {

// The gathered A output, when the problem has one (ProblemShape::gathered_out).
const TensorView* gathered_of(const RankTensors& on) {
  return on.outputs.size() > 1 ? &on.outputs[1].view : nullptr;
}

}  // namespace

RunInfo AllGatherMatmulProblem::call(Comm& comm, const RankTensors& on,
                                     const Options& options) const {
  return fused_all_gather_matmul(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                 on.outputs.at(0).view, gathered_of(on), options);
}

RunInfo AllGatherMatmulProblem::plan(const Comm& comm, const RankTensors& on,
                                     const Options& options) const {
  return plan_fused_all_gather_matmul(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                      on.outputs.at(0).view, gathered_of(on), options);
}

RunInfo MatmulReduceScatterProblem::call(Comm& comm, const RankTensors& on,
                                         const Options& options) const {
  return fused_matmul_reduce_scatter(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                     on.outputs.at(0).view, options);
}

RunInfo MatmulReduceScatterProblem::plan(const Comm& comm, const RankTensors& on,
                                         const Options& options) const {
  return plan_fused_matmul_reduce_scatter(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                          on.outputs.at(0).view, options);
}

}  // namespace verify
}  // namespace asynctp
