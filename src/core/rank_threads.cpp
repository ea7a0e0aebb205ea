#include "core/rank_threads.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/group.hpp"

namespace asynctp::core {

void run_on_rank_threads(int world_size, const std::function<void(int rank)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world_size));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void check_rank_argument(int rank, int world_size) {
  if (rank >= 0 && rank < world_size) return;
  throw Error(ErrorCode::invalid_argument, "rank: must lie in [0, " + std::to_string(world_size) +
                                               "), got " + std::to_string(rank));
}

std::vector<double> time_synchronous_calls(Comm& comm, int iterations, const RankCall& call,
                                           const BeforeIteration& before) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    if (before) before(i, ms.empty() ? std::nullopt : std::optional<double>(ms.back()));
    const Clock::time_point begin = Clock::now();
    call(comm, i);
    comm.synchronize();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
  }
  return ms;
}

}  // namespace asynctp::core

namespace asynctp {

void RankGroup::run(const std::function<void(Comm&)>& body) {
  core::run_on_rank_threads(world_size(), [&](int rank) {
    enter_rank_thread(rank);
    body(comm(rank));
  });
}

std::vector<double> RankGroup::time_calls(int iterations, const RankCall& call,
                                          const BeforeIteration& before,
                                          const std::vector<void*>& streams) {
  (void)streams;  // the calls finish before they return
  std::vector<std::vector<double>> ms(static_cast<std::size_t>(world_size()));
  run([&](Comm& comm) {
    ms[static_cast<std::size_t>(comm.rank())] = core::time_synchronous_calls(
        comm, iterations, call, comm.rank() == 0 ? before : BeforeIteration{});
  });
  std::vector<double> slowest(static_cast<std::size_t>(std::max(iterations, 0)), 0.0);
  for (const std::vector<double>& rank_ms : ms) {
    for (std::size_t i = 0; i < slowest.size(); ++i) slowest[i] = std::max(slowest[i], rank_ms[i]);
  }
  return slowest;
}

}  // namespace asynctp
