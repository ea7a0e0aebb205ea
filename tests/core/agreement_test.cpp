// The agreement step's verdict: every rank computes it from the same records,
// so it must be a pure function of them that names the first rank that
// rejected its arguments (with why), or the first field the ranks disagree
// on, and stays silent about what is each rank's own business (n, B layout,
// whether the gathered A is returned).
#include "core/agreement.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace asynctp::core {
namespace {

std::vector<CallRecord> agreeing(int world) {
  std::vector<CallRecord> records(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    CallRecord& rec = records[static_cast<std::size_t>(r)];
    rec.ok = true;
    rec.world_size = world;
    rec.problem.world_size = world;
    rec.problem.rank = r;
    rec.problem.m = 64;
    rec.problem.n = 32;
    rec.problem.k = 48;
    rec.problem.dtype = DType::bf16;
    rec.plan.algorithm = Algorithm::native;
    rec.plan.tile_m = 32;
    rec.plan.tile_n = 256;
    rec.plan.runnable = algorithm_bit(Algorithm::native);
  }
  return records;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Agreement, AgreeingRecordsGiveNoVerdict) {
  for (int world : {1, 2, 5}) EXPECT_EQ(find_disagreement(agreeing(world)), "") << world;
}

TEST(Agreement, LocalChoicesNeedNoAgreement) {
  auto records = agreeing(3);
  records[1].problem.n = 8;  // each rank has its own B slice
  records[2].problem.b_layout = Layout::col_major;
  records[2].problem.gathered_out = true;
  records[1].plan.reason = "some other words";
  EXPECT_EQ(find_disagreement(records), "");
}

TEST(Agreement, LowestRejectingRankIsNamedWithItsReason) {
  auto records = agreeing(4);
  records[3].ok = false;
  records[3].error = "c_out: shape must be 256x32";
  records[1].ok = false;
  records[1].error = "b: must not be null";
  const std::string verdict = find_disagreement(records);
  EXPECT_TRUE(contains(verdict, "rank 1 rejected its arguments: b: must not be null")) << verdict;
  // A rejection outranks any field disagreement.
  records = agreeing(2);
  records[1].problem.m = 1;
  records[1].ok = false;
  records[1].error.assign(3, 'x');  // (not = "x": GCC 12 -Wrestrict false positive)
  EXPECT_TRUE(contains(find_disagreement(records), "rank 1 rejected its arguments"))
      << find_disagreement(records);
}

TEST(Agreement, EachFieldIsNamed) {
  struct Case {
    const char* expected;
    void (*bend)(CallRecord&);
  };
  const Case cases[] = {
      {"ranks disagree on world size: rank 0 has 4, rank 2 has 3",
       [](CallRecord& r) { r.world_size = 3; }},
      {"ranks disagree on a_shard rows (m): rank 0 has 64, rank 2 has 72",
       [](CallRecord& r) { r.problem.m = 72; }},
      {"ranks disagree on a_shard columns (k): rank 0 has 48, rank 2 has 40",
       [](CallRecord& r) { r.problem.k = 40; }},
      {"ranks disagree on dtype: rank 0 has bf16, rank 2 has fp32",
       [](CallRecord& r) { r.problem.dtype = DType::fp32; }},
      // Plans that differ where no algorithm is one every rank can run (these
      // records say they can run nothing else: as forced plans do).
      {"ranks disagree on the algorithm: rank 0 has native (tile 32x256), rank 2 has pipelined "
       "(tile 0x0); no algorithm can run on every rank (rank 0 can run native; rank 2 can run "
       "pipelined)",
       [](CallRecord& r) {
         r.plan = {Algorithm::pipelined, 0, 0, "", "", algorithm_bit(Algorithm::pipelined)};
       }},
      {"ranks disagree on the algorithm: rank 0 has native (tile 32x256), rank 2 has native (tile "
       "64x256); no algorithm can run on every rank (rank 0 can run native; rank 2 can run native)",
       [](CallRecord& r) { r.plan.tile_m = 64; }},
      {"ranks disagree on the algorithm: rank 0 has native (tile 32x256), rank 2 has native (tile "
       "32x128); no algorithm can run on every rank (rank 0 can run native; rank 2 can run native)",
       [](CallRecord& r) { r.plan.tile_n = 128; }},
      {"the record from rank 2 of 4 says it is rank 1 of 4",
       [](CallRecord& r) { r.problem.rank = 1; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    auto records = agreeing(4);
    c.bend(records[2]);
    EXPECT_EQ(find_disagreement(records), c.expected);
  }
  // With several disagreements, the first field of the first differing rank.
  auto records = agreeing(4);
  records[3].problem.m = 8;
  records[1].problem.dtype = DType::fp16;
  records[1].problem.k = 8;
  EXPECT_TRUE(
      contains(find_disagreement(records), "a_shard columns (k): rank 0 has 48, rank 1 has 8"))
      << find_disagreement(records);
}

// Matmul + reduce-scatter: the ranks ship M x n partials cut into the same
// chunks, so M and n must agree; each rank's K-slice (k) is its own.
std::vector<CallRecord> agreeing_reduce_scatter(int world) {
  auto records = agreeing(world);
  for (CallRecord& r : records) r.problem.op = OpKind::matmul_reduce_scatter;
  return records;
}

TEST(AgreementReduceScatter, KSlicesAndLayoutsAreEachRanksOwn) {
  auto records = agreeing_reduce_scatter(3);
  records[1].problem.k = 8;
  records[2].problem.k = 1000;
  records[2].problem.b_layout = Layout::col_major;
  EXPECT_EQ(find_disagreement(records), "");
}

TEST(AgreementReduceScatter, EachFieldIsNamed) {
  struct Case {
    const char* expected;
    void (*bend)(CallRecord&);
  };
  const Case cases[] = {
      {"ranks disagree on the operation: rank 0 has fused_matmul_reduce_scatter, rank 2 has "
       "fused_all_gather_matmul",
       [](CallRecord& r) { r.problem.op = OpKind::all_gather_matmul; }},
      // m = 64 rows per rank of W = 4: M = 256.
      {"ranks disagree on a rows (M): rank 0 has 256, rank 2 has 288",
       [](CallRecord& r) { r.problem.m = 72; }},
      {"ranks disagree on b columns (n): rank 0 has 32, rank 2 has 40",
       [](CallRecord& r) { r.problem.n = 40; }},
      {"ranks disagree on dtype: rank 0 has bf16, rank 2 has fp16",
       [](CallRecord& r) { r.problem.dtype = DType::fp16; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    auto records = agreeing_reduce_scatter(4);
    c.bend(records[2]);
    EXPECT_EQ(find_disagreement(records), c.expected);
  }
}

// Ranks plan from their own problems (e.g. their own k), so they may choose
// different algorithms; where none is one every rank can run (here rank 1
// forced pipelined, and rank 0 can run only native), the verdict carries
// each planner's reason.
TEST(AgreementReduceScatter, AnAlgorithmMismatchSaysWhyEachRankChose) {
  auto records = agreeing_reduce_scatter(2);
  records[0].plan.reason = "bf16, rows per chunk fit";
  records[1].plan = {Algorithm::pipelined,
                     0,
                     0,
                     "forced by options or ASYNCTP_ALGO",
                     "",
                     algorithm_bit(Algorithm::pipelined)};
  const std::string verdict = find_disagreement(records);
  EXPECT_TRUE(contains(verdict,
                       "ranks disagree on the algorithm: rank 0 has native (tile 32x256), "
                       "rank 1 has pipelined (tile 0x0)"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "rank 1: forced by options or ASYNCTP_ALGO")) << verdict;
}

// What each rank could run, as an auto planner reports it.
constexpr unsigned kNativeAndBelow = kEveryAlgorithmBit;
constexpr unsigned kPipelinedAndBelow =
    algorithm_bit(Algorithm::pipelined) | algorithm_bit(Algorithm::decomposed);

// Auto on uneven K-slices: the planners chose differently, and the group
// runs the most ambitious algorithm no planner ranked below its own choice
// that every rank can run; the same on every rank, whatever its own record.
TEST(AgreedPlan, DifferentChoicesAgreeOnTheMostEveryRankCanRun) {
  auto records = agreeing_reduce_scatter(3);
  for (CallRecord& r : records) {
    r.plan.runnable = kNativeAndBelow;
    r.plan.reason = "native fits";
  }
  records[1].plan = {Algorithm::pipelined,
                     0,
                     0,
                     "native unavailable (k (12) is not a multiple "
                     "of 8); per-chunk GEMMs overlap",
                     "",
                     kPipelinedAndBelow};
  EXPECT_EQ(find_disagreement(records), "");
  EXPECT_EQ(group_algorithm(records), Algorithm::pipelined);
  for (int r = 0; r < 3; ++r) {
    const Plan plan = agreed_plan(records, r);
    EXPECT_EQ(plan.algorithm, Algorithm::pipelined) << r;
    EXPECT_EQ(plan.tile_m, 0);
  }
  // Rank 1 runs what it chose, with its own reason; the others say why not theirs.
  EXPECT_EQ(agreed_plan(records, 1).reason, records[1].plan.reason);
  const std::string reason = agreed_plan(records, 0).reason;
  EXPECT_TRUE(contains(reason, "the group runs pipelined")) << reason;
  EXPECT_TRUE(contains(reason, "rank 1's planner chose pipelined (native unavailable (k (12)"))
      << reason;
  EXPECT_TRUE(contains(reason, "this rank's native (native fits)")) << reason;

  // A rank that chose decomposed bounds the group at decomposed.
  records[2].plan = {Algorithm::decomposed, 0,  0,
                     "chunks too small",    "", algorithm_bit(Algorithm::decomposed)};
  EXPECT_EQ(find_disagreement(records), "");
  for (int r = 0; r < 3; ++r) EXPECT_EQ(agreed_plan(records, r).algorithm, Algorithm::decomposed);

  // One that cannot run pipelined (no peer access) moves the group below it.
  records = agreeing_reduce_scatter(2);
  records[0].plan.runnable =
      algorithm_bit(Algorithm::native) | algorithm_bit(Algorithm::decomposed);
  records[1].plan = {Algorithm::pipelined, 0, 0, "", "", kPipelinedAndBelow};
  EXPECT_EQ(find_disagreement(records), "");
  EXPECT_EQ(agreed_plan(records, 0).algorithm, Algorithm::decomposed);
  EXPECT_EQ(agreed_plan(records, 1).algorithm, Algorithm::decomposed);
}

// Native is agreed only where every rank planned it with the same tiles.
TEST(AgreedPlan, NativeWithOtherTilesFallsToWhatEveryRankCanRun) {
  auto records = agreeing(2);
  for (CallRecord& r : records) r.plan.runnable = kNativeAndBelow;
  records[1].plan.tile_m = 64;
  EXPECT_EQ(find_disagreement(records), "");
  EXPECT_EQ(agreed_plan(records, 0).algorithm, Algorithm::pipelined);
  EXPECT_EQ(agreed_plan(records, 1).algorithm, Algorithm::pipelined);
  // Same plans: each rank's own, reason and tiles untouched.
  records = agreeing(2);
  records[0].plan.reason = "mine";
  const Plan own = agreed_plan(records, 0);
  EXPECT_EQ(own.algorithm, Algorithm::native);
  EXPECT_EQ(own.tile_m, 32);
  EXPECT_EQ(own.reason, "mine");
}

// The workspace's growth is collective only when the group works with its
// peers' memory; decomposed needs none.
TEST(AgreedPlan, WorkspaceGrowthMattersOnlyWhenTheGroupPulls) {
  auto records = agreeing(2);
  for (CallRecord& r : records) r.plan.runnable = kNativeAndBelow;
  records[0].grows_workspace = true;
  EXPECT_TRUE(contains(find_disagreement(records), "whether the workspace must grow"))
      << find_disagreement(records);
  records[1].plan = {Algorithm::decomposed, 0, 0, "", "", algorithm_bit(Algorithm::decomposed)};
  EXPECT_EQ(find_disagreement(records), "");
}

}  // namespace
}  // namespace asynctp::core
