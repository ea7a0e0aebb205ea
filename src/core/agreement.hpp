// The agreement step of a collective call. Each rank checks its own
// arguments and publishes a record, whether they passed or not; then every
// rank reads all records and reaches the same verdict, so a bad argument on
// one rank becomes an error on every rank instead of a hang.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/bounded_barrier.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

struct CallRecord {
  bool ok = false;
  std::string error;  // why this rank rejected its arguments, when !ok
  int world_size = 0;
  ProblemDesc problem;
  Plan plan;
  TensorView shard;  // this rank's A shard, readable by its peers
  // Transports whose workspace grows collectively (NCCL): this call needs it
  // to grow, so every rank must take part in the growth.
  bool grows_workspace = false;
};

// Empty when every record is valid and the ranks agree on what the op's
// data movement and the signal protocol need; otherwise the first
// disagreement, in words. Every op: the operation, world size, dtype,
// algorithm and tiles. All-gather + matmul: m and k (the shards every rank
// gathers); n and B's layout are each rank's own business. Matmul +
// reduce-scatter: M and n (the partial chunks every rank ships); k (each
// rank's K-slice) and B's layout are each rank's own business.
std::string find_disagreement(const std::vector<CallRecord>& records);

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
// disagreement. Otherwise log the plan (ASYNCTP_DEBUG=INFO) and return.
void agree_or_throw(Barrier& barrier, const std::vector<CallRecord>& records, int rank,
                    std::int64_t timeout_ms, const std::exception_ptr& local_error);

// Publishes `mine` as records[rank], then agree_or_throw.
void publish_and_agree(Barrier& barrier, std::vector<CallRecord>& records,
                       const CallRecord& mine, int rank, std::int64_t timeout_ms,
                       const std::exception_ptr& local_error);

}  // namespace asynctp::core
