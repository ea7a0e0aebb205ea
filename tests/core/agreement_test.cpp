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
      {"ranks disagree on the algorithm: rank 0 has native (tile 32x256), rank 2 has pipelined "
       "(tile 0x0)",
       [](CallRecord& r) {
         r.plan = {Algorithm::pipelined, 0, 0, "", ""};
       }},
      {"ranks disagree on the algorithm: rank 0 has native (tile 32x256), rank 2 has native (tile "
       "64x256)",
       [](CallRecord& r) { r.plan.tile_m = 64; }},
      {"ranks disagree on the algorithm: rank 0 has native (tile 32x256), rank 2 has native (tile "
       "32x128)",
       [](CallRecord& r) { r.plan.tile_n = 128; }},
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
// different algorithms; the verdict then carries each planner's reason.
TEST(AgreementReduceScatter, AnAlgorithmMismatchSaysWhyEachRankChose) {
  auto records = agreeing_reduce_scatter(2);
  records[0].plan.reason = "bf16, rows per chunk fit";
  records[1].plan = {Algorithm::pipelined, 0, 0,
                     "native unavailable (k (12) is not a multiple of 8)", ""};
  const std::string verdict = find_disagreement(records);
  EXPECT_TRUE(contains(verdict,
                       "ranks disagree on the algorithm: rank 0 has native (tile 32x256), "
                       "rank 1 has pipelined (tile 0x0)"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "rank 1: native unavailable (k (12) is not a multiple of 8)"))
      << verdict;
}

}  // namespace
}  // namespace asynctp::core
