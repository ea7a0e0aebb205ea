// The point of the reduce-scatter's native schedule, proved by cause, not by
// wall-clock (as ArrivalsOverlap does for the all-gather op):
//  - the shipping of an early chunk does not wait for the rest of the GEMM:
//    the GEMM of each rank's own chunk (computed last) is held until the
//    rank's trace shows its first chunk shipped. Native gets there (a 30 s
//    hold that never runs out); decomposed, which ships only after its one
//    GEMM, cannot, so its hold (200 ms) runs out with nothing shipped;
//  - the owner adds early partials while later ones are still in flight: a
//    peer's shipment of the owner's last-due partial is held until the
//    owner's trace shows the first-due partial added.
// The traces also carry what `--trace` shows: GEMM spans of later chunks
// beside the shipping of earlier ones, and the reduction's spans.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/schedule.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::ReduceScatterProblem;
using asynctp_test::Seed;

constexpr int kWorld = 4;

bool has_arg(const Trace::Event& e, const std::string& key, int value) {
  const std::string text = "\"" + key + "\": " + std::to_string(value);
  const std::size_t at = e.args_json.find(text);
  if (at == std::string::npos) return false;
  const std::size_t after = at + text.size();
  return after == e.args_json.size() || e.args_json[after] == ',';
}

bool is_ship(const Trace::Event& e, int rank, int chunk) {
  return e.rank == rank && e.category == "copy" && e.name == "ship chunk " + std::to_string(chunk);
}

bool is_gemm_on(const Trace::Event& e, int rank, int chunk) {
  return e.rank == rank && e.category == "gemm" && e.lane.rfind("gemm worker", 0) == 0 &&
         has_arg(e, "chunk", chunk);
}

bool is_reduce_of(const Trace::Event& e, int rank, int source) {
  return e.rank == rank && e.category == "reduce" && has_arg(e, "source_rank", source);
}

template <typename Pred>
int count(const Trace& trace, Pred pred) {
  int n = 0;
  for (const Trace::Event& e : trace.events()) n += pred(e) ? 1 : 0;
  return n;
}

// Holds the calling thread until pred holds in the trace or `hold` passes;
// returns whether pred held.
template <typename Pred>
bool hold_until(const Trace& trace, std::chrono::milliseconds hold, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + hold;
  while (count(trace, pred) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

Options options_for(Algorithm algorithm, Trace& trace) {
  Options options;
  options.algorithm = algorithm;
  options.tile_m = 8;
  options.tile_n = 16;
  options.wait_timeout_ms = 60'000;  // longer than any hold
  options.trace = &trace;
  return options;
}

TEST(ReduceScatterOverlap, NativeShipsEarlyChunksWhileLaterOnesAreComputed) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  ReduceScatterProblem problem(asynctp_test::rs_shape(kWorld, 16, 32, 24), rng);
  const auto first_chunk = [](int rank) { return core::send_order(kWorld, rank).front(); };

  for (Algorithm algorithm : {Algorithm::native, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    const bool native = algorithm == Algorithm::native;
    const auto hold = std::chrono::milliseconds(native ? 30'000 : 200);
    Trace trace;
    // Several GEMM workers of a rank may reach its own chunk: the first to be
    // released records what it saw.
    std::vector<std::atomic<int>> shipped_at_release(kWorld);
    for (auto& v : shipped_at_release) v = -1;
    Options options = options_for(algorithm, trace);
    options.hooks.before_compute = [&](int rank, int chunk) {
      if (chunk != rank) return;  // hold only the own chunk, computed last
      const bool shipped = hold_until(
          trace, hold, [&](const Trace::Event& e) { return is_ship(e, rank, first_chunk(rank)); });
      int unset = -1;
      shipped_at_release[static_cast<std::size_t>(rank)].compare_exchange_strong(unset,
                                                                                 shipped ? 1 : 0);
    };
    asynctp_test::run_and_check(group, problem, options, 90.0);

    for (int rank = 0; rank < kWorld; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      double ship_end = -1, own_gemm_begin = -1, last_gemm_end = -1, first_ship_begin = -1;
      for (const Trace::Event& e : trace.events()) {
        if (e.rank != rank) continue;
        const double end = e.begin_us + e.duration_us;
        if (is_ship(e, rank, first_chunk(rank))) ship_end = end;
        if (e.category == "copy" && (first_ship_begin < 0 || e.begin_us < first_ship_begin)) {
          first_ship_begin = e.begin_us;
        }
        if (is_gemm_on(e, rank, rank) && (own_gemm_begin < 0 || e.begin_us < own_gemm_begin)) {
          own_gemm_begin = e.begin_us;
        }
        if (e.category == "gemm" && e.lane.rfind("gemm worker", 0) == 0) {
          last_gemm_end = std::max(last_gemm_end, end);
        }
      }
      ASSERT_GE(ship_end, 0) << "no ship span for the first chunk";
      if (native) {
        ASSERT_GE(own_gemm_begin, 0) << "no GEMM span on the own chunk";
        EXPECT_EQ(shipped_at_release[static_cast<std::size_t>(rank)].load(), 1)
            << "the first chunk was not shipped while the own chunk waited to be computed";
        EXPECT_LT(ship_end, own_gemm_begin);
        // One span per tile of the own chunk: 2 M tiles x 2 N tiles.
        EXPECT_EQ(count(trace, [&](const Trace::Event& e) { return is_gemm_on(e, rank, rank); }),
                  4);
      } else {
        EXPECT_EQ(shipped_at_release[static_cast<std::size_t>(rank)].load(), 0)
            << "decomposed shipped before its GEMM finished";
        EXPECT_GE(first_ship_begin, last_gemm_end) << "decomposed must finish its GEMM first";
      }
    }
  }
}

TEST(ReduceScatterOverlap, OwnerAddsEarlyPartialsWhileLaterOnesAreInFlight) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  ReduceScatterProblem problem(asynctp_test::rs_shape(kWorld, 16, 24, 16), rng);
  constexpr int kOwner = 0;
  const int first_source = core::partial_source(kWorld, kOwner, 0);
  const int last_source = core::partial_source(kWorld, kOwner, kWorld - 2);

  for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    Trace trace;
    bool added_first = false;
    Options options = options_for(algorithm, trace);
    options.hooks.before_copy = [&](int rank, int chunk) {
      if (rank != last_source || chunk != kOwner) return;
      added_first =
          hold_until(trace, std::chrono::milliseconds(30'000),
                     [&](const Trace::Event& e) { return is_reduce_of(e, kOwner, first_source); });
    };
    asynctp_test::run_and_check(group, problem, options, 90.0);
    EXPECT_TRUE(added_first) << "the owner did not add the partial of rank " << first_source
                             << " while the partial of rank " << last_source << " was held";
    // The earliest worker to add the first-due partial (each adds its rows).
    double first_added_end = -1, last_ship_begin = -1;
    for (const Trace::Event& e : trace.events()) {
      const double end = e.begin_us + e.duration_us;
      if (is_reduce_of(e, kOwner, first_source) && (first_added_end < 0 || end < first_added_end)) {
        first_added_end = end;
      }
      if (is_ship(e, last_source, kOwner)) last_ship_begin = e.begin_us;
    }
    ASSERT_GE(first_added_end, 0);
    ASSERT_GE(last_ship_begin, 0);
    EXPECT_LT(first_added_end, last_ship_begin);
  }
}

}  // namespace
}  // namespace asynctp
