// Timed calls on a loopback group and on one rank: asynctp/bench.hpp.
#include <barrier>

#include "asynctp/bench.hpp"
#include "asynctp/ops.hpp"

namespace asynctp::bench {

std::vector<double> time_calls(loopback::LoopbackGroup& group, int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  const int world = group.world_size();
  // spans[i][r]: rank r's call of iteration i.
  std::vector<std::vector<double>> spans(static_cast<std::size_t>(iterations),
                                         std::vector<double>(static_cast<std::size_t>(world)));
  const auto mean_span = [&](std::size_t i) {
    double sum = 0;
    for (double ms : spans[i]) sum += ms;
    return sum / world;
  };
  // Between iterations, so that no rank starts iteration i + 1 while rank 0
  // still reports iteration i.
  std::barrier<> iteration_start(world);
  group.run([&](Comm& comm) {
    const int r = comm.rank();
    try {
      for (std::size_t i = 0; i < spans.size(); ++i) {
        iteration_start.arrive_and_wait();
        if (r == 0 && before)
          before(static_cast<int>(i), i > 0 ? mean_span(i - 1) : std::optional<double>());
        call(comm, static_cast<int>(i));
        synchronize(comm);
        spans[i][static_cast<std::size_t>(r)] = group.last_call_ms(r);
      }
    } catch (...) {
      // A failing rank must not leave the others waiting at the barrier;
      // their next collective call then fails within the wait timeout.
      iteration_start.arrive_and_drop();
      throw;
    }
  });
  std::vector<double> ms(spans.size());
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i] = mean_span(i);
  return ms;
}

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
