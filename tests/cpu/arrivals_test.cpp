// Arrival perturbations through Options::hooks. Every algorithm reads a chunk
// only after acquiring its signal, so delayed, reordered and random arrival
// orders must all give exact results; and native must actually overlap: it
// computes the chunks that have arrived while a late one is still in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::Seed;
using asynctp_test::Shape;

// Native-capable shape (tile 16) so one shape serves all three algorithms.
Shape small_shape(int world) {
  Shape s;
  s.world = world;
  s.m = 32;
  s.n = 40;
  s.k = 48;
  return s;
}

Options with_algorithm(Algorithm a) {
  Options o;
  o.algorithm = a;
  o.tile_m = 16;
  o.tile_n = 16;
  o.wait_timeout_ms = 10'000;
  return o;
}

class Arrivals : public ::testing::TestWithParam<Algorithm> {
 protected:
  void run_and_check(const Options& options, int world = 4) {
    const Seed seed;
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    cpu::Group group({world, 2});
    FusedProblem problem(small_shape(world), rng);
    for (int round = 0; round < 2; ++round) {
      if (round > 0) problem.refill(rng);
      problem.poison_outputs();
      const auto outcomes = asynctp_test::run_collective(
          group, [&](Comm& comm) { return problem.call(comm, options); });
      asynctp_test::expect_all_ok(outcomes);
      for (const auto& out : outcomes) EXPECT_EQ(out.info.algorithm, GetParam());
      problem.expect_all_correct();
    }
  }
};

TEST_P(Arrivals, DelayedChunksGiveExactResults) {
  Options options = with_algorithm(GetParam());
  // Some peer chunks on some ranks arrive a few milliseconds late.
  options.hooks.before_copy = [](int rank, int chunk) {
    if (chunk != rank && (rank + 2 * chunk) % 3 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3 + chunk));
    }
  };
  run_and_check(options);
}

TEST_P(Arrivals, ReversedArrivalOrderGivesExactResults) {
  Options options = with_algorithm(GetParam());
  options.hooks.reorder = [](int, const std::vector<int>& order) {
    return std::vector<int>(order.rbegin(), order.rend());
  };
  // Delay the first copy a little so the GEMM side really runs ahead of the
  // (reversed) arrivals instead of finding everything already there.
  options.hooks.before_copy = [](int rank, int chunk) {
    if (chunk == (rank + 3) % 4) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  run_and_check(options);
}

TEST_P(Arrivals, RandomArrivalOrderPerRankGivesExactResults) {
  const Seed order_seed("order");
  SCOPED_TRACE(order_seed.note());
  Options options = with_algorithm(GetParam());
  options.hooks.reorder = [base = order_seed.value](int rank, const std::vector<int>& order) {
    std::vector<int> shuffled = order;
    std::mt19937_64 rng(base + static_cast<std::uint64_t>(rank));
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    return shuffled;
  };
  run_and_check(options, 8);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, Arrivals,
                         ::testing::Values(Algorithm::native, Algorithm::pipelined,
                                           Algorithm::decomposed),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(to_string(info.param));
                         });

// Spans of one rank from a trace of one call.
struct RankTimeline {
  double delayed_copy_begin = -1, delayed_copy_end = -1;
  double last_local_gemm_end = -1;
  double first_gemm_begin = -1;  // any GEMM work on a gathered row block
  int local_gemm_spans = 0;
};

// A GEMM worker's span (not the call-level GEMM span), and whether it is on
// row block `chunk`.
bool is_gemm_worker_span(const Trace::Event& e) {
  return e.category == "gemm" && e.lane.rfind("gemm worker", 0) == 0;
}

bool is_on_chunk(const Trace::Event& e, int chunk) {
  return e.args_json.find("\"chunk\": " + std::to_string(chunk) + ",") != std::string::npos;
}

RankTimeline timeline(const Trace& trace, int rank, int local_chunk, int delayed_chunk) {
  RankTimeline t;
  for (const Trace::Event& e : trace.events()) {
    if (e.rank != rank) continue;
    const double end = e.begin_us + e.duration_us;
    if (e.category == "copy" && e.name == "copy chunk " + std::to_string(delayed_chunk)) {
      t.delayed_copy_begin = e.begin_us;
      t.delayed_copy_end = end;
    }
    if (!is_gemm_worker_span(e)) continue;
    if (t.first_gemm_begin < 0 || e.begin_us < t.first_gemm_begin) t.first_gemm_begin = e.begin_us;
    if (is_on_chunk(e, local_chunk)) {
      ++t.local_gemm_spans;
      t.last_local_gemm_end = std::max(t.last_local_gemm_end, end);
    }
  }
  return t;
}

// One rank's GEMM spans recorded so far: all of them, and those on one chunk
// (the trace is thread-safe, so a hook may read it while the call runs).
struct GemmSpanCount {
  int all = 0, on_chunk = 0;
};

GemmSpanCount gemm_spans(const Trace& trace, int rank, int chunk) {
  GemmSpanCount count;
  for (const Trace::Event& e : trace.events()) {
    if (e.rank != rank || !is_gemm_worker_span(e)) continue;
    ++count.all;
    if (is_on_chunk(e, chunk)) ++count.on_chunk;
  }
  return count;
}

// The point of native: each rank computes its own chunk while a late one is
// still in flight. Proved by cause, not by wall-clock: the late chunk's copy
// is held back until the rank's trace shows every tile of its local chunk
// computed. Native gets there (a bounded 30 s hold that never runs out);
// decomposed, under the same hold, cannot start any GEMM work before the late
// chunk lands, so its hold runs out (after 200 ms) with nothing computed:
// the check can tell the two apart. (A timing version of this test, the late
// copy merely slept for, failed on a loaded 2-core CI machine.)
TEST(ArrivalsOverlap, NativeComputesArrivedChunksWhileALateOneIsInFlight) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 4;
  constexpr int kLocalTiles = 12;  // 4 M tiles x 3 N tiles per chunk with 16 x 16 tiles
  Shape shape = small_shape(kWorld);
  shape.m = 64;
  cpu::Group group({kWorld, 2});
  FusedProblem problem(shape, rng);
  const auto late_chunk = [](int rank) { return (rank + kWorld - 1) % kWorld; };

  for (Algorithm algorithm : {Algorithm::native, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    const bool native = algorithm == Algorithm::native;
    const auto hold = native ? std::chrono::milliseconds(30'000) : std::chrono::milliseconds(200);
    Trace trace;
    // Local-chunk spans each rank's trace showed when its late copy was let go.
    std::vector<GemmSpanCount> spans_at_release(kWorld, GemmSpanCount{-1, -1});
    Options options = with_algorithm(algorithm);
    options.wait_timeout_ms = 60'000;  // longer than any hold
    options.trace = &trace;
    options.hooks.before_copy = [&](int rank, int chunk) {
      if (chunk != late_chunk(rank)) return;
      const auto deadline = std::chrono::steady_clock::now() + hold;
      GemmSpanCount spans = gemm_spans(trace, rank, rank);
      while (spans.on_chunk < kLocalTiles && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        spans = gemm_spans(trace, rank, rank);
      }
      spans_at_release[static_cast<std::size_t>(rank)] = spans;
    };
    problem.poison_outputs();
    const auto outcomes = asynctp_test::run_collective(
        group, [&](Comm& comm) { return problem.call(comm, options); });
    asynctp_test::expect_all_ok(outcomes);
    problem.expect_all_correct();

    for (int rank = 0; rank < kWorld; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const RankTimeline t = timeline(trace, rank, rank, late_chunk(rank));
      ASSERT_GE(t.delayed_copy_end, 0) << "no copy span for the late chunk";
      ASSERT_GE(t.first_gemm_begin, 0) << "no GEMM spans";
      const GemmSpanCount released_with = spans_at_release[static_cast<std::size_t>(rank)];
      if (native) {
        ASSERT_EQ(t.local_gemm_spans, kLocalTiles) << "one span per tile of the local chunk";
        EXPECT_EQ(released_with.on_chunk, kLocalTiles)
            << "the local chunk was not computed while the late chunk was held back";
        EXPECT_LT(t.last_local_gemm_end, t.delayed_copy_begin);
      } else {
        EXPECT_EQ(released_with.all, 0) << "decomposed computed before the all-gather finished";
        // The copy's begin, not its end: the end is stamped after the
        // release, by which time a woken worker may already have started.
        EXPECT_GE(t.first_gemm_begin, t.delayed_copy_begin)
            << "decomposed must wait for the whole all-gather";
      }
    }
  }
}

// A reorder hook that is not a permutation is a caller error, reported on the
// rank whose hook misbehaved; the other ranks' calls are unaffected.
TEST(ArrivalsReorder, NonPermutationIsInvalidArgumentOnThatRank) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 4;
  cpu::Group group({kWorld, 2});
  FusedProblem problem(small_shape(kWorld), rng);
  const std::vector<std::vector<int>> bad_orders = {
      {1, 1, 2, 3},  // duplicate
      {1, 2, 3},     // missing one
      {1, 2, 3, 0, 1},
      {1, 2, 3, 7},  // out of range
      {},
  };
  for (const auto& bad : bad_orders) {
    for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      SCOPED_TRACE(std::string(to_string(algorithm)) + " order size " + std::to_string(bad.size()));
      Options options = with_algorithm(algorithm);
      options.hooks.reorder = [&](int rank, const std::vector<int>& order) {
        return rank == 1 ? bad : order;
      };
      problem.refill(rng);
      problem.poison_outputs();
      const auto outcomes = asynctp_test::run_collective(
          group, [&](Comm& comm) { return problem.call(comm, options); });
      ASSERT_FALSE(outcomes[1].ok);
      EXPECT_EQ(outcomes[1].code, ErrorCode::invalid_argument) << outcomes[1].message;
      EXPECT_NE(outcomes[1].message.find("options.hooks.reorder"), std::string::npos)
          << outcomes[1].message;
      EXPECT_NE(outcomes[1].message.find("permutation"), std::string::npos) << outcomes[1].message;
      for (int r : {0, 2, 3}) {
        EXPECT_TRUE(outcomes[static_cast<std::size_t>(r)].ok)
            << "rank " << r << ": " << outcomes[static_cast<std::size_t>(r)].message;
        problem.expect_correct(r);
      }
    }
  }
}

}  // namespace
}  // namespace asynctp
