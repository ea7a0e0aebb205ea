// One host thread per rank, as the in-process groups run their ranks (CPU
// ranks, GPU virtual ranks), and the default rule that times their calls.
#pragma once

#include <functional>
#include <vector>

#include "asynctp/group.hpp"

namespace asynctp::core {

// Runs body(rank) for rank in [0, world_size) on one thread each and joins
// them all. If any rank throws, rethrows the exception of the lowest failing
// rank after every thread has joined.
void run_on_rank_threads(int world_size, const std::function<void(int rank)>& body);

// A group's rank argument: throws Error(invalid_argument) "rank: must lie in
// [0, world_size), got <rank>" when it names no rank of the group.
void check_rank_argument(int rank, int world_size);

// One rank's calls on a communicator whose calls finish before they return:
// the wall time of each, from the call to synchronize's return.
std::vector<double> time_synchronous_calls(Comm& comm, int iterations, const RankCall& call,
                                           const BeforeIteration& before);

}  // namespace asynctp::core
