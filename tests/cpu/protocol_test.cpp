// The epoch protocol across calls: no reset between calls, so a flag left by
// one call must never let the next read stale data. 1000 back-to-back calls
// alternate between two input sets through the same internal workspace; a
// consumer that trusted an old flag would compute with the other set's rows.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/reference.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::Seed;
using asynctp_test::Shape;

Shape tiny(int world) {
  Shape s;
  s.world = world;
  s.m = 16;
  s.n = 16;
  s.k = 16;
  s.gathered = false;  // the internal workspace is reused by every call
  return s;
}

TEST(Protocol, ThousandBackToBackCallsAlternatingInputs) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 2;
  constexpr int kRounds = 20, kCallsPerRound = 50;  // 1000 calls, fresh inputs every 50
  cpu::Group group({kWorld, 2});
  FusedProblem set_a(tiny(kWorld), rng), set_b(tiny(kWorld), rng);
  Options options;
  options.algorithm = Algorithm::native;
  options.tile_m = 8;
  options.tile_n = 8;
  options.wait_timeout_ms = 10'000;
  // Every 7th call delays a peer chunk a little, so a GEMM that did not wait
  // for the current epoch would find the previous call's rows.
  std::atomic<int> call_index{0};
  options.hooks.before_copy = [&](int rank, int chunk) {
    if (chunk != rank && call_index.load() % 7 == 3) std::this_thread::sleep_for(std::chrono::microseconds(300));
  };

  int calls = 0;
  std::vector<int> failures(kWorld, 0);
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      set_a.refill(rng);
      set_b.refill(rng);
    }
    set_a.poison_outputs();  // c_out is re-poisoned before every call below
    set_b.poison_outputs();
    for (int r = 0; r < kWorld; ++r) {  // compute the references outside the timed loop
      set_a.reference(r);
      set_b.reference(r);
    }
    // One group.run per round; inside it, each rank makes 50 calls.
    asynctp_test::run_bounded(group, [&](Comm& comm) {
      const int r = comm.rank();
      for (int i = 0; i < kCallsPerRound; ++i) {
        FusedProblem& p = i % 2 == 0 ? set_a : set_b;
        if (r == 0) call_index = round * kCallsPerRound + i;  // read by hooks after the barrier
        core::poison(p.c(r));
        try {
          const RunInfo info = p.call(comm, options);
          if (info.algorithm != Algorithm::native) ++failures[static_cast<std::size_t>(r)];
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << r << " call " << i << ": " << e.what();
          ++failures[static_cast<std::size_t>(r)];
          return;
        }
        const auto cmp = core::compare_to_reference(p.c(r), p.reference(r));
        if (!cmp.ok(core::error_tolerance(p.shape().dtype))) {
          ++failures[static_cast<std::size_t>(r)];
          if (failures[static_cast<std::size_t>(r)] <= 3) {
            ADD_FAILURE() << "rank " << r << " round " << round << " call " << i << ": error "
                          << cmp.relative_frobenius_error << " unwritten " << cmp.unwritten;
          }
        }
      }
    }, 60.0, "1000 back-to-back calls");
    calls += kCallsPerRound;
  }
  EXPECT_EQ(calls, 1000);
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(failures[static_cast<std::size_t>(r)], 0) << "rank " << r;
  // And the last results, checked in full (gathered output off: still poisoned).
  set_a.expect_all_correct();
  set_b.expect_all_correct();
}

// Each algorithm keeps its own state consistent across many calls on a W=4
// group, switching algorithms between calls on the same signals.
TEST(Protocol, AlgorithmsInterleavedOnOneGroup) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 4;
  cpu::Group group({kWorld, 2});
  Shape shape = tiny(kWorld);
  shape.m = 32;
  shape.gathered = true;
  FusedProblem problem(shape, rng);
  const Algorithm algorithms[] = {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed};
  for (int i = 0; i < 30; ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    Options options;
    options.algorithm = algorithms[i % 3];
    options.tile_m = 16;
    options.tile_n = 8;
    options.wait_timeout_ms = 10'000;
    problem.refill(rng);
    problem.poison_outputs();
    const auto outcomes = asynctp_test::run_collective(
        group, [&](Comm& comm) { return problem.call(comm, options); });
    asynctp_test::expect_all_ok(outcomes);
    problem.expect_all_correct();
    if (HasFailure()) break;
  }
}

// A chunk that never arrives fails that rank's call with a timeout; the
// group is not left broken: the next call on the same group succeeds, and
// its epoch is not confused by the flag the dropped chunk left behind.
TEST(Protocol, NextCallSucceedsAfterATimeout) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 4;
  cpu::Group group({kWorld, 2});
  Shape shape = tiny(kWorld);
  shape.gathered = true;
  FusedProblem problem(shape, rng);
  for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    Options dropping;
    dropping.algorithm = algorithm;
    dropping.tile_m = 8;
    dropping.tile_n = 8;
    dropping.wait_timeout_ms = 150;
    dropping.hooks.drop = [](int rank, int chunk) { return rank == 2 && chunk == 0; };
    problem.poison_outputs();
    auto outcomes = asynctp_test::run_collective(
        group, [&](Comm& comm) { return problem.call(comm, dropping); });
    ASSERT_FALSE(outcomes[2].ok);
    EXPECT_EQ(outcomes[2].code, ErrorCode::timeout) << outcomes[2].message;

    Options normal = dropping;
    normal.hooks = {};
    normal.wait_timeout_ms = 10'000;
    for (int again = 0; again < 2; ++again) {
      problem.refill(rng);
      problem.poison_outputs();
      outcomes = asynctp_test::run_collective(
          group, [&](Comm& comm) { return problem.call(comm, normal); });
      asynctp_test::expect_all_ok(outcomes);
      problem.expect_all_correct();
    }
  }
}

// Both ops on one group, alternating call by call with alternating inputs
// and algorithms: they share each rank's epoch and chunk flags (the
// all-gather's producer releases them, the reduce-scatter's GEMM does), so a
// flag left by a call of either op must never let a call of the other read
// stale data, and the reduce-scatter's receive flags, released by peers,
// rely on every rank's epoch advancing in step through both ops.
TEST(Protocol, BothOpsInterleavedOnOneGroup) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 3;
  cpu::Group group({kWorld, 2});
  Shape shape = tiny(kWorld);
  FusedProblem gather(shape, rng);
  asynctp_test::ReduceScatterProblem scatter_a(asynctp_test::rs_shape(kWorld, 16, 16, 16), rng);
  asynctp_test::ReduceScatterProblem scatter_b(asynctp_test::rs_shape(kWorld, 16, 16, 24), rng);
  const Algorithm algorithms[] = {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed};
  for (int i = 0; i < 60; ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    Options options;
    options.algorithm = algorithms[(i / 2) % 3];
    options.tile_m = 8;
    options.tile_n = 8;
    options.wait_timeout_ms = 10'000;
    if (i % 2 == 0) {
      gather.refill(rng);
      asynctp_test::run_and_check(group, gather, options);
    } else {
      asynctp_test::ReduceScatterProblem& p = i % 4 == 1 ? scatter_a : scatter_b;
      p.refill(rng);
      asynctp_test::run_and_check(group, p, options);
    }
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace asynctp
