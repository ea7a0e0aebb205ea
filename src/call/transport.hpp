// A transport: what one kind of communicator brings to the one call flow
// (collective.hpp). It knows how its ranks agree on a call, how a peer's
// bytes reach a rank and what signals them, and where the workspace lives;
// the ops' rules, plans and schedules are not its business beyond running
// the schedule an agreed call names.
//
// The library's communicators (cpu threads, loopback ranks on one GPU, NCCL
// ranks on many) derive from it; users see them as asynctp::Comm.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>

#include "asynctp/comm.hpp"
#include "asynctp/options.hpp"
#include "call/checked_call.hpp"
#include "core/agreement.hpp"
#include "core/op_call.hpp"

namespace asynctp::call {

class Transport : public Comm {
 public:
  // Throws when this communicator can no longer be used (an earlier failure
  // left its ranks out of step). Checked before anything else.
  virtual void check_usable() const {}

  // The local check: the op's rules, this transport's own (device residency,
  // capture, peer access), and the plan. Local: no communication, nothing
  // written. Throws Error naming the argument and the rule.
  virtual CheckedCall check(const core::OpCall& call, const Options& options) const = 0;

  // Publishes this rank's record (`mine.ok` false with `mine.error` when the
  // local check failed) and reads every rank's, bounded by `timeout_ms`. On
  // any disagreement or failed record every rank throws: its own
  // `local_error` first, else Error(mismatch) naming the disagreement.
  // Otherwise it sets mine.plan to the plan the group agreed on for this
  // rank (core::agreed_plan: its own, or the algorithm every rank can run
  // where the ranks' planners chose differently).
  // `checked` is valid only when mine.ok. Local work that must precede the
  // publication (e.g. recording that the shard is ready) may fail: it then
  // sets `local_error` and publishes the record as failed, so that the peers
  // learn of it instead of waiting.
  virtual void agree(core::CallRecord& mine, std::exception_ptr& local_error,
                     const CheckedCall& checked, const core::OpCall& call, const Options& options,
                     std::int64_t timeout_ms) = 0;

  // Runs (cpu) or enqueues (gpu) the agreed call's schedule; returns the
  // call's epoch (its signals' value), for the trace.
  virtual std::uint32_t execute(const core::OpCall& call, const CheckedCall& checked,
                                const Options& options) = 0;

  // Whether execute() has finished the work when it returns (cpu) rather
  // than enqueued it on a stream (gpu): the trace names the span after it.
  virtual bool synchronous() const noexcept = 0;

  // The measured choice's clock, in slots [0, core::kTimedCallSlots) (a
  // group's timing rule may use the slots above): the next uncaptured
  // execute() is timed into `slot` (-1: into none, e.g. after an execute()
  // that failed). Its time is its wall time where synchronous(), else its
  // device work's, between the events that bound it on the stream.
  virtual void time_next_call(int slot) = 0;
  // The time of the call timed into `slot`, once it has finished: nullopt
  // while its work still runs, unless `wait`, which waits for it as
  // synchronize() does (bounded; throws what synchronize() throws).
  virtual std::optional<double> timed_call_ms(int slot, bool wait) = 0;

  // This rank's measurements for the measured choice (ASYNCTP_TUNE=on).
  core::CallTuner& tuner() noexcept { return tuner_; }

 private:
  core::CallTuner tuner_;
};

}  // namespace asynctp::call
