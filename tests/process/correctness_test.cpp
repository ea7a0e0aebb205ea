// The CPU process transport (one rank per process, shared memory) against
// the float64 reference: W = 1..4 processes, both ops, every algorithm
// forced, on one communicator per rank (so later calls reuse the signals and
// the shared workspace of earlier ones, and some make it grow). Outputs are
// poisoned before each call and every element must be written.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "process/process_ranks.hpp"
#include "support/fused_problem.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::Outcome;
using asynctp_test::outcome_of;
using asynctp_test::ReduceScatterProblem;
using asynctp_test::Seed;

Options forced(Algorithm algorithm) {
  Options options;
  options.algorithm = algorithm;
  options.wait_timeout_ms = 20'000;  // fail rather than hang
  if (algorithm == Algorithm::native) {
    options.tile_m = 16;
    options.tile_n = 16;
  }
  return options;
}

// Runs one checked call of `problem` on this rank; false (with `out` set)
// when the call threw.
template <class Problem>
bool checked_call(Comm& comm, Problem& problem, const Options& options, Outcome& out) {
  problem.poison_outputs();
  out = outcome_of([&] { return problem.call(comm, options); });
  EXPECT_TRUE(out.ok) << "rank " << comm.rank() << ": " << out.message;
  if (!out.ok) return false;
  EXPECT_EQ(out.info.algorithm, *options.algorithm) << out.info.reason;
  problem.expect_correct(comm.rank());
  return true;
}

class ProcessCorrectness : public ::testing::TestWithParam<int> {};

TEST_P(ProcessCorrectness, BothOpsEveryAlgorithmMatchFloat64Reference) {
  const int world = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::mt19937_64 first_rng = seed.rng();

  const cpu::UniqueId id = cpu::make_unique_id();
  const auto reports = asynctp_test::run_process_ranks(world, id, [&](Comm& comm) {
    std::mt19937_64 rng = first_rng;  // every rank draws the same problems
    Outcome out;
    for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      SCOPED_TRACE(to_string(algorithm));
      const bool native = algorithm == Algorithm::native;
      // Native: bf16 on its tile grid; the others: fp32 / fp16 off any grid.
      const DType dtype =
          native ? DType::bf16 : (algorithm == Algorithm::pipelined ? DType::fp32 : DType::fp16);
      const std::int64_t m = native ? 32 : 13;
      const std::int64_t n = native ? 48 : 29;
      FusedProblem all_gather(asynctp_test::make_shape(world, m, n, native ? 40 : 21, dtype,
                                                       /*b_col_major=*/!native),
                              rng);
      if (!checked_call(comm, all_gather, forced(algorithm), out)) return out;

      asynctp_test::RsShape rs = asynctp_test::rs_shape(world, m, n, 8, dtype, native);
      for (int r = 0; r < world; ++r)
        rs.k[static_cast<std::size_t>(r)] = native ? 8 * (r + 2) : 9 + 5 * r;
      ReduceScatterProblem reduce_scatter(rs, rng);
      if (!checked_call(comm, reduce_scatter, forced(algorithm), out)) return out;
    }
    return out;
  });
  asynctp_test::expect_all_ranks_ok(reports);
  EXPECT_EQ(asynctp_test::leftover_segments(id), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Worlds, ProcessCorrectness, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "W" + std::to_string(info.param);
                         });

// Calls whose shapes need more shared workspace than the group has (the
// regions start at 64 KiB per rank): the ranks grow it together, and calls
// before, between and after the growths stay correct.
TEST(ProcessWorkspace, GrowsAcrossCallsAndLeavesNothingBehind) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::mt19937_64 first_rng = seed.rng();
  const cpu::UniqueId id = cpu::make_unique_id();
  const auto reports = asynctp_test::run_process_ranks(2, id, [&](Comm& comm) {
    std::mt19937_64 rng = first_rng;
    Outcome out;
    const Options options = forced(Algorithm::pipelined);
    // All-gather region: m * k * 4 bytes; reduce-scatter: (W-1) * m * n * 4.
    FusedProblem small(asynctp_test::make_shape(2, 16, 24, 32, DType::fp32), rng);
    FusedProblem large(asynctp_test::make_shape(2, 160, 24, 256, DType::fp32), rng);  // 160 KiB
    ReduceScatterProblem larger(asynctp_test::rs_shape(2, 384, 256, 24, DType::fp32),
                                rng);  // 384 KiB
    for (int round = 0; round < 2; ++round) {
      if (!checked_call(comm, small, options, out)) return out;
      if (!checked_call(comm, large, options, out)) return out;
      if (!checked_call(comm, larger, options, out)) return out;
      if (!checked_call(comm, small, options, out)) return out;
    }
    return out;
  });
  asynctp_test::expect_all_ranks_ok(reports);
  EXPECT_EQ(asynctp_test::leftover_segments(id), std::vector<std::string>{});
}

}  // namespace
}  // namespace asynctp
