// Timed calls on a cpu::Group: asynctp/bench.hpp.
#include <algorithm>
#include <chrono>

#include "asynctp/bench.hpp"
#include "asynctp/ops.hpp"

namespace asynctp::bench {

std::vector<double> time_calls(cpu::Group& group, int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  using Clock = std::chrono::steady_clock;
  const auto count = static_cast<std::size_t>(iterations);
  std::vector<std::vector<double>> ms(static_cast<std::size_t>(group.world_size()),
                                      std::vector<double>(count));
  group.run([&](Comm& comm) {
    std::vector<double>& mine = ms[static_cast<std::size_t>(comm.rank())];
    for (std::size_t i = 0; i < count; ++i) {
      if (comm.rank() == 0 && before) {
        before(static_cast<int>(i), i > 0 ? mine[i - 1] : std::optional<double>());
      }
      const Clock::time_point begin = Clock::now();
      call(comm, static_cast<int>(i));
      synchronize(comm);
      mine[i] = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
    }
  });
  std::vector<double> slowest(count, 0.0);
  for (const std::vector<double>& rank_ms : ms) {
    for (std::size_t i = 0; i < count; ++i) slowest[i] = std::max(slowest[i], rank_ms[i]);
  }
  return slowest;
}

}  // namespace asynctp::bench
