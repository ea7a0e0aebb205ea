// What the ranks of one CPU group share: the barrier and, per rank, the
// record each call publishes (its arguments' summary and its A shard). The
// records are the symmetric workspace of this backend: every rank reads every
// other rank's registered shard directly.
#pragma once

#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/tensor.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "cpu/barrier.hpp"

namespace asynctp::cpu {

struct CallRecord {
  bool ok = false;
  std::string error;  // why this rank rejected its arguments, when !ok
  int world_size = 0;
  core::ProblemDesc problem;
  core::Plan plan;
  TensorView shard;
};

struct GroupState {
  GroupState(int world, int workers)
      : world_size(world), workers_per_rank(workers), barrier(world),
        records(static_cast<std::size_t>(world)) {}

  const int world_size;
  const int workers_per_rank;
  BoundedBarrier barrier;
  std::vector<CallRecord> records;
};

// Empty when every rank's record is valid and they agree on what the gather
// and the signal protocol need; otherwise the first disagreement, in words.
std::string find_disagreement(const std::vector<CallRecord>& records);

}  // namespace asynctp::cpu
