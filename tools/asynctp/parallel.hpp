// A parallel loop over ranks for the tool's own host work (filling inputs,
// float64 references, comparisons), bounded by the hardware threads so that
// W = 64 ranks on a laptop does not mean 64 float64 GEMMs in memory at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace asynctp::tool {

inline int host_parallelism(int tasks) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(tasks, hardware));
}

// Runs fn(i) for i in [0, count); rethrows the first exception after all joined.
template <typename Fn>
void parallel_for(int count, Fn&& fn) {
  std::atomic<int> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (int i = next++; i < count && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const int extra = host_parallelism(count) - 1;
  for (int t = 0; t < extra; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace asynctp::tool
