// Perturbed arrivals on the CUDA loopback backend. Every algorithm reads a
// chunk only after its signal, so late and reordered chunks must still give
// exact results.
//
//   LoopbackArrivals/AllAlgorithms.DelayedArrivalsTakeTheModelledTime
//       Link::arrival at 0.5 GB/s (4 MiB chunks, W = 4): correct on every
//       rank, and each rank's call (enqueue to synchronize's return) takes at
//       least the modelled time of its last peer chunk,
//       (W - 1) * chunk_bytes / link_gbps; so does its device span
//       (LoopbackGroup::last_call_ms), which lies inside that host interval.
//   LoopbackArrivals/AllAlgorithms.ReversedArrivalOrder
//       hooks.reorder reverses the schedule's order, over Link::pcie and a
//       slow Link::arrival: correct; the hook is called on every rank with
//       the schedule's order (a permutation of the W chunks, the rank's own
//       chunk first); on the arrival link the call still takes the modelled
//       time.
//   LoopbackArrivals/AllAlgorithms.ShuffledOrderPerRank
//       W = 8, a different random permutation per rank (seeded), Link::pcie:
//       correct.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gpu/loopback_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::Shape;
using asynctp_test::loopback::LoopbackProblem;
using asynctp_test::loopback::RankResult;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

constexpr double kSlowGbps = 0.5;

// When the last peer chunk arrives on Link::arrival, in milliseconds after
// the call's clock starts: (W - 1) * chunk_bytes / link_gbps.
double modelled_last_arrival_ms(const LoopbackProblem& p, double gbps) {
  return (p.world() - 1) * static_cast<double>(p.chunk_bytes()) / (gbps * 1e9) * 1e3;
}

void expect_took_modelled_time(const std::vector<RankResult>& results, double modelled_ms) {
  for (std::size_t r = 0; r < results.size(); ++r) {
    std::printf("    rank %zu: %.2f ms (modelled last arrival %.2f ms)\n", r, results[r].host_ms,
                modelled_ms);
    if (!results[r].ok()) continue;
    // The host interval contains the device's wait for the last signal; 1%
    // for clock granularity.
    EXPECT_GE(results[r].host_ms, 0.99 * modelled_ms)
        << "rank " << r << " finished before its last peer chunk could have arrived";
    EXPECT_LT(results[r].host_ms, modelled_ms + 30'000.0) << "rank " << r;
  }
}

// Each rank's device span starts before its clock does (the start word is
// written inside it) and ends after its last chunk's signal, so it holds the
// whole modelled transfer; it is device work between the call and
// synchronize's return, so it fits in that host interval (0.5 ms of slack
// for the two clocks).
void expect_spans_hold_the_transfer(const LoopbackGroup& group,
                                    const std::vector<RankResult>& results, double modelled_ms) {
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!results[r].ok()) continue;
    const double span = group.last_call_ms(static_cast<int>(r));
    std::printf("    rank %zu: device span %.2f ms\n", r, span);
    EXPECT_GE(span, 0.99 * modelled_ms) << "rank " << r << ": the span missed part of the transfer";
    EXPECT_LE(span, results[r].host_ms + 0.5) << "rank " << r << ": the span is longer than the "
                                                 "host's interval around the call";
  }
}

// Records how the reorder hook was called: per rank, the number of calls and
// whether every `order` it was given was the schedule's order (a permutation
// of 0..W-1 with the rank's own chunk first).
struct ReorderLog {
  static constexpr int kMaxWorld = 8;
  std::array<std::atomic<int>, kMaxWorld> calls{};
  std::array<std::atomic<bool>, kMaxWorld> bad_order{};
  std::atomic<bool> bad_rank{false};
  int world = 0;

  explicit ReorderLog(int w) : world(w) { reset(); }
  void reset() {
    for (auto& c : calls) c.store(0);
    for (auto& b : bad_order) b.store(false);
    bad_rank.store(false);
  }
  void record(int rank, const std::vector<int>& order) {
    if (rank < 0 || rank >= world) {
      bad_rank.store(true);
      return;
    }
    calls[static_cast<std::size_t>(rank)].fetch_add(1);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int>(order.size()) == world && order.front() == rank;
    for (int i = 0; ok && i < world; ++i) ok = sorted[static_cast<std::size_t>(i)] == i;
    if (!ok) bad_order[static_cast<std::size_t>(rank)].store(true);
  }
  void expect_every_rank_called() const {
    EXPECT_FALSE(bad_rank.load()) << "the hook was called with a rank outside [0, W)";
    for (int r = 0; r < world; ++r) {
      EXPECT_GE(calls[static_cast<std::size_t>(r)].load(), 1)
          << "hooks.reorder was never called on rank " << r;
      EXPECT_FALSE(bad_order[static_cast<std::size_t>(r)].load())
          << "rank " << r << ": the hook's order was not the schedule's (a permutation of the "
          << world << " chunks, own chunk first)";
    }
  }
};

class LoopbackArrivals : public ::testing::TestWithParam<Algorithm> {};

TEST_P(LoopbackArrivals, DelayedArrivalsTakeTheModelledTime) {
  ASYNCTP_REQUIRE_SM90();
  const Algorithm algorithm = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 4;
  // 512 x 4096 bf16 = 4 MiB per chunk: 8.4 ms per chunk at 0.5 GB/s.
  const Shape shape = lb::loopback_shape(kWorld, 512, 256, 4096);
  lb::print_case(seed, shape.to_string());
  LoopbackGroup group(lb::loopback_config(kWorld, Link::arrival, kSlowGbps));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(shape, rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const double modelled_ms = modelled_last_arrival_ms(problem, kSlowGbps);
  ASSERT_GT(modelled_ms, 20.0);
  const Options options = lb::options_for(algorithm);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) {
      ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    }
    const auto results = lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        "delayed arrivals");
    lb::expect_all_ok(results, algorithm);
    std::printf("  round %d:\n", round);
    expect_took_modelled_time(results, modelled_ms);
    expect_spans_hold_the_transfer(group, results, modelled_ms);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

TEST_P(LoopbackArrivals, ReversedArrivalOrder) {
  ASYNCTP_REQUIRE_SM90();
  const Algorithm algorithm = GetParam();
  constexpr int kWorld = 4;
  for (Link link : {Link::pcie, Link::arrival}) {
    const Seed seed(cuda::to_string(link));
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    // 256 x 1024 bf16 = 512 KiB per chunk.
    const Shape shape = lb::loopback_shape(kWorld, 256, 264, 1024, DType::bf16,
                                           /*b_col_major=*/link == Link::arrival);
    SCOPED_TRACE(shape.to_string() + " link " + cuda::to_string(link));
    lb::print_case(seed, shape.to_string() + " link " + cuda::to_string(link));
    const double gbps = link == Link::arrival ? kSlowGbps : 400.0;
    LoopbackGroup group(lb::loopback_config(kWorld, link, gbps));
    RankStreams streams;
    CUDA_ASSERT(streams.create(kWorld));
    LoopbackProblem problem(shape, rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    ReorderLog log(kWorld);
    Options options = lb::options_for(algorithm);
    options.hooks.reorder = [&log](int rank, const std::vector<int>& order) {
      log.record(rank, order);
      return std::vector<int>(order.rbegin(), order.rend());
    };
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      if (round > 0) {
        ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
        ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
      }
      log.reset();
      const auto results = lb::run_ranks(
          group, streams,
          [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
          "reversed arrivals");
      lb::expect_all_ok(results, algorithm);
      log.expect_every_rank_called();
      if (link == Link::arrival) {
        std::printf("  round %d:\n", round);
        expect_took_modelled_time(results, modelled_last_arrival_ms(problem, gbps));
      }
      ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
    }
  }
}

TEST_P(LoopbackArrivals, ShuffledOrderPerRank) {
  ASYNCTP_REQUIRE_SM90();
  const Algorithm algorithm = GetParam();
  constexpr int kWorld = 8;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const Shape shape = lb::loopback_shape(kWorld, 128, 392, 256, DType::bf16, true);
  lb::print_case(seed, shape.to_string());
  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(shape, rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  ReorderLog log(kWorld);
  Options options = lb::options_for(algorithm);
  options.hooks.reorder = [&log, base = seed.value](int rank, const std::vector<int>& order) {
    log.record(rank, order);
    std::vector<int> shuffled = order;
    std::mt19937_64 shuffle_rng(base + static_cast<std::uint64_t>(rank));
    std::shuffle(shuffled.begin(), shuffled.end(), shuffle_rng);
    return shuffled;
  };
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      "shuffled arrivals");
  lb::expect_all_ok(results, algorithm);
  log.expect_every_rank_called();
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, LoopbackArrivals,
                         ::testing::Values(Algorithm::native, Algorithm::pipelined,
                                           Algorithm::decomposed),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
}  // namespace asynctp
