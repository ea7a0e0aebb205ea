// Randomized stress of the CUDA loopback backend, judged by the same
// contract as the CPU backend's (support/stress_cases.hpp): random world
// sizes 1..8, shapes on and off the native tile grid, dtypes, B layouts,
// algorithms, both ops, both links, with the faults the GPU hooks take:
// reordered arrivals (all-gather), a dropped chunk (all-gather, native: the
// kernel's bounded wait must name it), one rank's bad argument. Host-side
// delays are not a GPU hook and are drawn as fault-free calls. A call that
// hangs aborts the process (the loopback support's watchdog); the groups are
// reused, so a failed call must leave its group usable for the next.
//
// ASYNCTP_STRESS_CALLS (default 60 here: the recorded H200 run uses 1,000),
// ASYNCTP_STRESS_SEED as for the CPU, ASYNCTP_STRESS_TIMEOUT_MS (default 500:
// a dropped chunk surfaces at synchronize, after the device's bounded wait).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"
#include "support/stress_cases.hpp"

namespace asynctp {
namespace {

using asynctp_test::Outcome;
using asynctp_test::gpu::DeviceRsProblem;
using asynctp_test::loopback::LoopbackProblem;
using asynctp_test::loopback::RankResult;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
using namespace asynctp_test::stress;
namespace lb = asynctp_test::loopback;

// The faults the loopback hooks take: reorder on the all-gather, drop on a
// forced-native all-gather (the only path whose wait is the kernel's own);
// a drop's call is moved onto the native kernel's grid (bf16, 128-row
// chunks, n and k multiples of 64) so that its kernel runs and times out.
Fault fit_to_loopback(Fault f, Case& c) {
  const auto round_up = [](std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; };
  switch (f) {
    case Fault::delay: return Fault::none;
    case Fault::reorder: return c.reduce_scatter ? Fault::none : f;
    case Fault::drop:
      if (c.reduce_scatter) return Fault::none;
      c.options.algorithm = Algorithm::native;
      c.dtype = DType::bf16;
      c.m = round_up(c.m, 128);
      c.n = round_up(c.n, 64);
      for (auto& k : c.k) k = round_up(k, 64);
      return f;
    default: return f;
  }
}

CaseLimits loopback_limits() {
  CaseLimits limits;
  limits.forced_tiles = false;  // the native configs are the kernel's, not the caller's
  limits.grid_m = 128;          // the smallest native config's rows
  limits.grid = 64;
  limits.off_grid_max = 100;
  limits.drop_timeout_ms = env_int("ASYNCTP_STRESS_TIMEOUT_MS", 500);
  limits.fit = fit_to_loopback;
  return limits;
}

Outcome outcome_of(const RankResult& r) {
  Outcome o;
  o.ok = r.ok();
  o.info = r.info;
  o.code = r.code;
  o.message = r.message;
  return o;
}

class LoopbackStress {
 public:
  void run_one(Case c, std::mt19937_64& rng, Tally& tally) {
    ++tally.calls;
    ++tally.by_fault[to_string(c.fault)];
    const Link link = rng() % 2 ? Link::pcie : Link::arrival;
    Group& group = group_of(c.world, link);
    c.text += link == Link::pcie ? " link=pcie" : " link=arrival";
    std::vector<LocalVerdict> verdicts;
    std::vector<std::string> problems;
    const auto bad = [&](int r) { return c.fault == Fault::bad_argument && r == c.fault_rank; };
    const auto run = [&](const lb::RankCall& call) {
      const auto results = lb::run_ranks(*group.loopback, group.streams, call, c.text);
      std::vector<Outcome> outcomes;
      seconds_.assign(results.size(), 0.0);
      for (std::size_t r = 0; r < results.size(); ++r) {
        outcomes.push_back(outcome_of(results[r]));
        seconds_[r] = results[r].host_ms / 1e3;  // a dropped chunk surfaces at synchronize
      }
      return outcomes;
    };

    if (c.reduce_scatter) {
      asynctp_test::RsShape shape = asynctp_test::rs_shape(c.world, c.m, c.n, 1, c.dtype,
                                                           c.b_col_major);
      shape.k = c.k;
      DeviceRsProblem problem(shape, rng);
      ASSERT_NO_FATAL_FAILURE(problem.prepare());
      const auto out = [&](int r) { return bad(r) ? broken(problem.out(r)) : problem.out(r); };
      for (int r = 0; r < c.world; ++r) {
        verdicts.push_back(local_verdict([&] {
          plan_fused_matmul_reduce_scatter(group.loopback->comm(r), problem.a(r), problem.b(r),
                                           out(r), c.options);
        }));
      }
      const auto outcomes = run([&](Comm& comm, cudaStream_t s) {
        const int r = comm.rank();
        Options options = c.options;
        options.stream = s;
        return fused_matmul_reduce_scatter(comm, problem.a(r), problem.b(r), out(r), options);
      });
      judge(c, verdicts, outcomes, seconds_, tally, problems, "out",
            [&](int r) { return problem.downloaded_verdict(r).ok; },
            [&](int r) { return untouched(problem.downloaded_out(r)); },
            "(the partial of rank " + std::to_string(c.fault_rank) + ") never arrived");
    } else {
      asynctp_test::Shape shape = asynctp_test::make_shape(c.world, c.m, c.n, c.k[0], c.dtype,
                                                           c.b_col_major);
      shape.gathered = c.gathered;
      LoopbackProblem problem(shape, rng);
      ASSERT_NO_FATAL_FAILURE(problem.prepare());
      const auto out = [&](int r) { return bad(r) ? broken(problem.c(r)) : problem.c(r); };
      const auto gathered = [&](int r) { return c.gathered ? problem.g(r) : TensorView{}; };
      for (int r = 0; r < c.world; ++r) {
        const TensorView g = gathered(r);
        verdicts.push_back(local_verdict([&] {
          plan_fused_all_gather_matmul(group.loopback->comm(r), problem.a(r), problem.b(r), out(r),
                                       c.gathered ? &g : nullptr, c.options);
        }));
      }
      const auto outcomes = run([&](Comm& comm, cudaStream_t s) {
        const int r = comm.rank();
        const TensorView g = gathered(r);
        Options options = c.options;
        options.stream = s;
        return fused_all_gather_matmul(comm, problem.a(r), problem.b(r), out(r),
                                       c.gathered ? &g : nullptr, options);
      });
      ASSERT_NO_FATAL_FAILURE(problem.download_outputs());
      judge_all_gather(c, verdicts, outcomes, seconds_, tally, problems, problem.host());
    }
    report_problems(c, tally, problems);
  }

 private:
  struct Group {
    std::unique_ptr<LoopbackGroup> loopback;
    RankStreams streams;
  };

  Group& group_of(int world, Link link) {
    auto& g = groups_[{world, link == Link::pcie}];
    if (!g) {
      g = std::make_unique<Group>();
      g->loopback = std::make_unique<LoopbackGroup>(lb::loopback_config(world, link));
      const cudaError_t e = g->streams.create(world);
      EXPECT_EQ(cudaSuccess, e) << cudaGetErrorName(e);
      warm_up(*g, world);
    }
    return *g;
  }

  // One fault-free call on a new group: its one-time set-up (kernel
  // loading, first workspaces) would otherwise count against the short
  // timeout of a call with a dropped chunk, at the ranks' host barriers.
  static void warm_up(Group& g, int world) {
    std::mt19937_64 rng(world);
    LoopbackProblem problem(asynctp_test::make_shape(world, 128, 64, 64, DType::bf16, false), rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    const auto results = lb::run_ranks(
        *g.loopback, g.streams,
        [&](Comm& comm, cudaStream_t s) {
          Options options;
          options.stream = s;
          return problem.call(comm, options, s);
        },
        "stress warm-up");
    lb::expect_all_ok(results);
  }

  std::map<std::pair<int, bool>, std::unique_ptr<Group>> groups_;
  std::vector<double> seconds_;
};

TEST(LoopbackStress, RandomCallsEndCorrectOrWithTheDocumentedError) {
  ASYNCTP_REQUIRE_SM90();
  asynctp_test::CleanPlannerEnv clean_env;
  LoopbackStress stress;
  run_stress("cuda loopback", loopback_limits(), env_int("ASYNCTP_STRESS_CALLS", 60),
             static_cast<std::uint64_t>(env_int("ASYNCTP_STRESS_SEED", 0x5eed)),
             [&](const Case& c, std::mt19937_64& rng, Tally& tally) {
               stress.run_one(c, rng, tally);
             });
}

}  // namespace
}  // namespace asynctp
