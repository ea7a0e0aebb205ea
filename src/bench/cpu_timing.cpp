// Timed calls on one synchronous rank: asynctp/bench.hpp.
#include "asynctp/bench.hpp"
#include "core/rank_threads.hpp"

namespace asynctp::bench {

std::vector<double> time_calls(Comm& comm, int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  return core::time_synchronous_calls(comm, iterations, call, before);
}

}  // namespace asynctp::bench
