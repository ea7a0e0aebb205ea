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

// The outcome of one call: its RunInfo, or what it threw.
inline Outcome outcome_of(const std::function<asynctp::RunInfo()>& call) {
  Outcome out;
  try {
    out.info = call();
    out.ok = true;
  } catch (const asynctp::Error& e) {
    out.code = e.code();
    out.message = e.what();
  } catch (const std::exception& e) {
    out.message = e.what();
  }
  return out;
}

// Every rank runs call(comm); each rank's result or exception is recorded.
inline std::vector<Outcome> run_collective(
    asynctp::cpu::Group& group, const std::function<asynctp::RunInfo(asynctp::Comm&)>& call,
    double limit_s = 30.0) {
  std::vector<Outcome> outcomes(static_cast<std::size_t>(group.world_size()));
  run_bounded(
      group,
      [&](asynctp::Comm& comm) {
        outcomes[static_cast<std::size_t>(comm.rank())] = outcome_of([&] { return call(comm); });
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

// One checked run of a problem (FusedProblem, ReduceScatterProblem): poison
// the outputs, every rank calls problem.call(comm, options), every rank must
// succeed and every output match the reference. Returns the outcomes, for
// checks of what the ranks report.
template <class Problem>
std::vector<Outcome> run_and_check(asynctp::cpu::Group& group, Problem& problem,
                                   const asynctp::Options& options, double limit_s = 30.0) {
  problem.poison_outputs();
  std::vector<Outcome> outcomes = run_collective(
      group, [&](asynctp::Comm& comm) { return problem.call(comm, options); }, limit_s);
  expect_all_ok(outcomes);
  problem.expect_all_correct();
  return outcomes;
}

// Every rank ran the algorithm `options` forced, said so, and (native) with
// the forced tiles.
inline void expect_forced(const std::vector<Outcome>& outcomes, const asynctp::Options& options) {
  for (const Outcome& out : outcomes) {
    EXPECT_EQ(out.info.algorithm, options.algorithm) << out.info.reason;
    EXPECT_NE(out.info.reason.find("forced"), std::string::npos) << out.info.reason;
    if (options.algorithm == asynctp::Algorithm::native) {
      EXPECT_EQ(out.info.tile_m, options.tile_m.value_or(0));
      EXPECT_EQ(out.info.tile_n, options.tile_n.value_or(0));
    }
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

// Clears the planner's environment for one scope (ASYNCTP_ALGO, _TILE_M,
// _TILE_N, _WAIT_TIMEOUT_MS, _TUNE), so a test decides them.
struct CleanPlannerEnv {
  ScopedEnv tune{"ASYNCTP_TUNE", std::nullopt};
  ScopedEnv algo{"ASYNCTP_ALGO", std::nullopt};
  ScopedEnv tile_m{"ASYNCTP_TILE_M", std::nullopt};
  ScopedEnv tile_n{"ASYNCTP_TILE_N", std::nullopt};
  ScopedEnv timeout{"ASYNCTP_WAIT_TIMEOUT_MS", std::nullopt};
};

// Every rank failed with `code` and a message containing `phrase`.
inline void expect_all_failed(const std::vector<Outcome>& outcomes, asynctp::ErrorCode code,
                              const std::string& phrase) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    const Outcome& o = outcomes[r];
    ASSERT_FALSE(o.ok) << "rank " << r << " ran";
    EXPECT_EQ(o.code, code) << "rank " << r << ": " << o.message;
    EXPECT_NE(o.message.find(phrase), std::string::npos) << "rank " << r << ": " << o.message;
  }
}

// One rank's bad argument: that rank failed with invalid_argument naming
// "<argument>: " and the rule (`phrase`), every other rank with a mismatch
// naming the rank that rejected its arguments.
inline void expect_rejected_by(const std::vector<Outcome>& outcomes, int bad_rank,
                               const std::string& argument, const std::string& phrase) {
  const Outcome& bad = outcomes[static_cast<std::size_t>(bad_rank)];
  ASSERT_FALSE(bad.ok);
  EXPECT_EQ(bad.code, asynctp::ErrorCode::invalid_argument) << bad.message;
  EXPECT_NE(bad.message.find(argument + ": "), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find(phrase), std::string::npos) << bad.message;
  const std::string named = "rank " + std::to_string(bad_rank) + " rejected its arguments";
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    if (static_cast<int>(r) == bad_rank) continue;
    const Outcome& o = outcomes[r];
    ASSERT_FALSE(o.ok) << "rank " << r << " ran although rank " << bad_rank << " rejected";
    EXPECT_EQ(o.code, asynctp::ErrorCode::mismatch) << o.message;
    EXPECT_NE(o.message.find(named), std::string::npos) << o.message;
  }
}

}  // namespace asynctp_test
