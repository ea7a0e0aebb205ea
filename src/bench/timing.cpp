// Timed calls on one rank of a launched job: asynctp/bench.hpp.
#include "asynctp/bench.hpp"
#include "asynctp/ops.hpp"

namespace asynctp::bench {

std::vector<double> time_calls(Comm& comm, void* stream, int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    if (before) before(i, ms.empty() ? std::nullopt : std::optional<double>(ms.back()));
    Event begin, end;
    begin.record(stream);
    call(comm, i);
    end.record(stream);
    synchronize(comm);
    end.synchronize();
    ms.push_back(end.ms_since(begin));
  }
  return ms;
}

}  // namespace asynctp::bench
