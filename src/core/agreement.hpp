// The agreement step of a collective call. Each rank checks its own
// arguments and publishes a record, whether they passed or not; then every
// rank reads all records and reaches the same verdict, so a bad argument on
// one rank becomes an error on every rank instead of a hang.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/bounded_barrier.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "core/tuning.hpp"

namespace asynctp::core {

struct CallRecord {
  bool ok = false;
  std::string error;  // why this rank rejected its arguments, when !ok
  int world_size = 0;
  ProblemDesc problem;
  // This rank's own plan: what its planner chose, and what else it could run
  // (plan.runnable). Once the ranks agree, the transport's agree() sets it to
  // the plan the group agreed on (agreed_plan).
  Plan plan;
  TensorView shard;  // this rank's A shard, readable by its peers
  // Transports whose workspace grows collectively (NCCL): this call needs it
  // to grow, so every rank must take part in the growth.
  bool grows_workspace = false;
  // This rank's measured-choice proposal for the call (core/tuning.hpp);
  // agreed_plan resolves every rank's the same way.
  TuneProposal tune;
};

// Empty when every record is valid and the ranks agree on what the op's
// data movement and the signal protocol need; otherwise the first
// disagreement, in words. Every op: the operation, world size, dtype, and an
// algorithm every rank can run (group_algorithm). All-gather + matmul: m and
// k (the shards every rank gathers); n and B's layout are each rank's own
// business. Matmul + reduce-scatter: M and n (the partial chunks every rank
// ships); k (each rank's K-slice) and B's layout are each rank's own
// business. Last, that each record is the one its rank should send (its
// rank and world size).
std::string find_disagreement(const std::vector<CallRecord>& records);

// The algorithm the group runs, chosen from the records alone so that every
// rank makes the same choice: the ranks' own when all planned the same
// algorithm and tiles; otherwise the most ambitious algorithm (native >
// pipelined > decomposed) that no rank's planner ranked below its own choice
// and that every rank can run (Plan::runnable). Native then never qualifies:
// ranks that planned it with other tiles cut chunks into other signal pieces.
// Nullopt when no algorithm qualifies (e.g. forced algorithms that differ).
std::optional<Algorithm> group_algorithm(const std::vector<CallRecord>& records);

// The plan `rank` runs once find_disagreement(records) is empty: where the
// records' measured-choice proposals resolve to an algorithm every rank can
// run (resolve_tuning), that algorithm, its Plan::tune saying what the call
// does for the measurement; else its own when the group runs what it chose;
// otherwise the group's algorithm, with a reason saying that the group's
// choice differed from this rank's planner, which rank's choice set it, and
// why each chose as it did.
Plan agreed_plan(const std::vector<CallRecord>& records, int rank);

// Marks `mine` failed with `error`, the local failure this rank found while
// getting ready to publish: the record still goes out, so that the peers
// learn of it instead of waiting. Call it while handling the exception.
void record_local_failure(CallRecord& mine, std::exception_ptr& local_error,
                          const std::string& error);

// The agreement step as every in-process group runs it, once `records[rank]`
// is published: meet the others at the barrier, then read every record. On a
// disagreement, meet once more (nobody may publish the next call's record
// before all have read these) and throw: this rank's own error
// (`local_error`) if it had one, else Error(mismatch) naming the first
// disagreement. Otherwise return the plan this rank runs (agreed_plan),
// logged (ASYNCTP_DEBUG=INFO).
Plan agree_or_throw(Barrier& barrier, const std::vector<CallRecord>& records, int rank,
                    std::int64_t timeout_ms, const std::exception_ptr& local_error);

// Publishes `mine` as records[rank], then agree_or_throw; on return
// mine.plan is the plan the group agreed on for this rank.
void publish_and_agree(Barrier& barrier, std::vector<CallRecord>& records, CallRecord& mine,
                       int rank, std::int64_t timeout_ms, const std::exception_ptr& local_error);

}  // namespace asynctp::core
