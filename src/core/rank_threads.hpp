// One host thread per rank, as the in-process groups run their ranks (CPU
// ranks, GPU virtual ranks).
#pragma once

#include <functional>

namespace asynctp::core {

// Runs body(rank) for rank in [0, world_size) on one thread each and joins
// them all. If any rank throws, rethrows the exception of the lowest failing
// rank after every thread has joined.
void run_on_rank_threads(int world_size, const std::function<void(int rank)>& body);

// A group's rank argument: throws Error(invalid_argument) "rank: must lie in
// [0, world_size), got <rank>" when it names no rank of the group.
void check_rank_argument(int rank, int world_size);

}  // namespace asynctp::core
