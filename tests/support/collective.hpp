// Running a collective on every rank of a CPU group with per-rank outcomes
// and a watchdog: a hang is a failure to report, not a test run that never
// ends, so after `limit_s` the process prints what it was doing and aborts.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/printers.hpp"
#include "support/seed.hpp"

namespace asynctp_test {

struct Outcome {
  bool ok = false;
  asynctp::RunInfo info;
  std::optional<asynctp::ErrorCode> code;  // set when an asynctp::Error was thrown
  std::string message;                     // what() of whatever was thrown
};

// Runs group.run(body) on a helper thread; aborts the process if it takes
// longer than limit_s (a stuck rank thread cannot be stopped, and a test must
// never hang). Returns the wall time in seconds. Any group with run(body):
// cpu::Group, cuda::LoopbackGroup.
template <class Group>
double run_bounded(Group& group, const std::function<void(asynctp::Comm&)>& body,
                   double limit_s = 30.0, const std::string& what = "collective") {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;
  const auto begin = std::chrono::steady_clock::now();
  std::thread runner([&] {
    try {
      group.run(body);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    done_cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!done_cv.wait_for(lock, std::chrono::duration<double>(limit_s), [&] { return done; })) {
      std::fprintf(stderr, "HANG: %s did not finish within %.1f s (test %s); aborting\n",
                   what.c_str(), limit_s, current_test_name().c_str());
      std::fflush(stdout);
      std::fflush(stderr);
      std::abort();
    }
  }
  runner.join();
  if (error) std::rethrow_exception(error);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

// Every rank runs call(comm); each rank's result or exception is recorded.
inline std::vector<Outcome> run_collective(
    asynctp::cpu::Group& group, const std::function<asynctp::RunInfo(asynctp::Comm&)>& call,
    double limit_s = 30.0) {
  std::vector<Outcome> outcomes(static_cast<std::size_t>(group.world_size()));
  run_bounded(
      group,
      [&](asynctp::Comm& comm) {
        Outcome& out = outcomes[static_cast<std::size_t>(comm.rank())];
        try {
          out.info = call(comm);
          out.ok = true;
        } catch (const asynctp::Error& e) {
          out.code = e.code();
          out.message = e.what();
        } catch (const std::exception& e) {
          out.message = e.what();
        }
      },
      limit_s);
  return outcomes;
}

// Asserts every rank succeeded; prints the first failure's message otherwise.
inline void expect_all_ok(const std::vector<Outcome>& outcomes) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_TRUE(outcomes[r].ok) << "rank " << r << " threw: " << outcomes[r].message;
  }
}

// Sets (or unsets, for nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace asynctp_test
