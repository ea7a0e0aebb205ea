#include "core/rank_threads.hpp"

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

}  // namespace asynctp::core

namespace asynctp {

void RankGroup::run(const std::function<void(Comm&)>& body) {
  core::run_on_rank_threads(world_size(), [&](int rank) {
    enter_rank_thread(rank);
    body(comm(rank));
  });
}

}  // namespace asynctp
