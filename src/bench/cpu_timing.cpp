// Timed calls on the CPU backend (a cpu::Group, or one synchronous rank):
// asynctp/bench.hpp.
#include <algorithm>
#include <chrono>

#include "asynctp/bench.hpp"
#include "asynctp/ops.hpp"

namespace asynctp::bench {

std::vector<double> time_calls(Comm& comm, int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    if (before) before(i, ms.empty() ? std::nullopt : std::optional<double>(ms.back()));
    const Clock::time_point begin = Clock::now();
    call(comm, i);
    synchronize(comm);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
  }
  return ms;
}

std::vector<double> time_calls(cpu::Group& group, int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  const auto count = static_cast<std::size_t>(iterations);
  std::vector<std::vector<double>> ms(static_cast<std::size_t>(group.world_size()));
  group.run([&](Comm& comm) {
    ms[static_cast<std::size_t>(comm.rank())] =
        time_calls(comm, iterations, call, comm.rank() == 0 ? before : BeforeIteration{});
  });
  std::vector<double> slowest(count, 0.0);
  for (const std::vector<double>& rank_ms : ms) {
    for (std::size_t i = 0; i < count; ++i) slowest[i] = std::max(slowest[i], rank_ms[i]);
  }
  return slowest;
}

}  // namespace asynctp::bench
