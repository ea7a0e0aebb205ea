// The agreement records that cross processes (src/core/agreement_wire: NCCL
// ranks all-gather them, CPU process ranks share them in shared memory):
// every field survives the trip, long errors are cut visibly, and a block
// from another format is refused rather than misread. No GPU needed.
#include "core/agreement_wire.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "core/planner.hpp"

namespace asynctp::core {
namespace {

core::CallRecord sample() {
  core::CallRecord r;
  r.ok = true;
  r.world_size = 8;
  r.problem.world_size = 8;
  r.problem.rank = 5;
  r.problem.m = 1024;
  r.problem.n = 3584;
  r.problem.k = 8192;
  r.problem.dtype = DType::fp16;
  r.problem.b_layout = core::Layout::col_major;
  r.problem.gathered_out = true;
  r.plan.algorithm = Algorithm::pipelined;
  r.plan.tile_m = 256;
  r.plan.tile_n = 160;
  r.plan.runnable =
      core::algorithm_bit(Algorithm::pipelined) | core::algorithm_bit(Algorithm::decomposed);
  r.plan.reason = "native unavailable (k (12) is not a multiple of 8)";
  r.grows_workspace = true;
  r.tune.step = TuneStep::complete;
  r.tune.algorithm = Algorithm::pipelined;
  r.tune.times = {{Algorithm::pipelined, 1.234567}, {Algorithm::decomposed, 0.5}};
  r.tune.group_time = core::GroupTime::mean_over_ranks;
  return r;
}

TEST(AgreementWire, EveryFieldSurvivesTheTrip) {
  const core::CallRecord in = sample();
  const core::CallRecord out = decode(encode(in));
  EXPECT_EQ(in.ok, out.ok);
  EXPECT_EQ(in.world_size, out.world_size);
  EXPECT_EQ(in.problem.rank, out.problem.rank);
  EXPECT_EQ(in.problem.m, out.problem.m);
  EXPECT_EQ(in.problem.n, out.problem.n);
  EXPECT_EQ(in.problem.k, out.problem.k);
  EXPECT_EQ(in.problem.dtype, out.problem.dtype);
  EXPECT_EQ(in.problem.b_layout, out.problem.b_layout);
  EXPECT_EQ(in.problem.gathered_out, out.problem.gathered_out);
  EXPECT_EQ(in.plan.algorithm, out.plan.algorithm);
  EXPECT_EQ(in.plan.tile_m, out.plan.tile_m);
  EXPECT_EQ(in.plan.tile_n, out.plan.tile_n);
  EXPECT_EQ(in.problem.op, out.problem.op);
  EXPECT_EQ(in.grows_workspace, out.grows_workspace);
  EXPECT_EQ(in.plan.runnable, out.plan.runnable);
  EXPECT_EQ(in.plan.reason, out.plan.reason);  // a good record's text is its reason
  EXPECT_EQ(in.tune.step, out.tune.step);
  EXPECT_EQ(in.tune.algorithm, out.tune.algorithm);
  EXPECT_EQ(in.tune.group_time, out.tune.group_time);
  ASSERT_EQ(in.tune.times.size(), out.tune.times.size());
  for (std::size_t i = 0; i < in.tune.times.size(); ++i) {
    EXPECT_EQ(in.tune.times[i].algorithm, out.tune.times[i].algorithm);
    EXPECT_NEAR(in.tune.times[i].ms, out.tune.times[i].ms, 1e-6);  // to the nanosecond
  }
  EXPECT_EQ("", out.error);
  // Records that differ encode differently (the key of the agreed-call cache).
  core::CallRecord other = in;
  other.problem.n += 8;
  EXPECT_NE(encode(in), encode(other));
}

TEST(AgreementWire, ErrorsTravelAndLongOnesAreCut) {
  core::CallRecord r = sample();
  r.ok = false;
  r.error = "c_out: must have n = 3584 columns, got 3576";
  EXPECT_EQ(r.error, decode(encode(r)).error);
  EXPECT_FALSE(decode(encode(r)).ok);
  r.error = std::string(1000, 'x');
  const std::string cut = decode(encode(r)).error;
  EXPECT_LT(cut.size(), kWireRecordBytes);
  EXPECT_EQ("...", cut.substr(cut.size() - 3));
}

TEST(AgreementWire, ForeignBlocksAreRefused) {
  WireRecord junk{};
  junk.fill(0x5a);
  EXPECT_THROW(decode(junk), Error);
  WireRecord bad = encode(sample());
  bad[7 * 8] = 9;  // dtype field out of range
  EXPECT_THROW(decode(bad), Error);
}

// A broken or hostile peer's numbers never reach the verdict or the
// planner: each field outside what any record holds is refused by name.
TEST(AgreementWire, EveryFieldOutOfRangeIsRefusedByName) {
  struct Case {
    std::size_t field;
    std::int64_t value;
    const char* named;
  };
  const Case cases[] = {
      {1, 2, "ok = 2"},
      {2, 0, "world size = 0"},
      {2, (std::int64_t{1} << 20) + 1, "world size"},
      {3, -1, "rank = -1"},
      {3, 8, "rank 8 of world size 8"},
      {4, -16, "m = -16"},
      {5, std::int64_t{1} << 31, "n = 2147483648"},
      {6, std::int64_t{1} << 62, "k = 4611686018427387904"},
      {7, 3, "dtype = 3"},
      {8, 2, "B layout = 2"},
      {9, -1, "gathered output = -1"},
      {10, 0, "algorithm = 0"},  // auto: a plan names what runs
      {10, 4, "algorithm = 4"},
      {11, -256, "tile M = -256"},
      {12, std::int64_t{1} << 40, "tile N"},
      {13, 2, "op = 2"},
      {14, 7, "whether the workspace grows = 7"},
      {15, 16, "runnable algorithms = 16"},
      {15, 1, "runnable algorithms = 1, which names no algorithm"},
      {16, 4, "tuning step = 4"},
      {17, -1, "tuned algorithm = -1"},
      {18, 4, "tuned times = 4"},
      {19, 4, "tuned algorithm 0 = 4"},
      {22, -5, "tuned time 0 = -5"},
      {24, std::int64_t{1} << 51, "tuned time 2"},
      {25, 2, "tuned group time = 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.named);
    WireRecord wire = encode(sample());
    std::memcpy(wire.data() + c.field * sizeof(std::int64_t), &c.value, sizeof c.value);
    try {
      (void)decode(wire);
      ADD_FAILURE() << "decoded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::backend);
      EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << e.what();
    }
  }
  // The text must end inside its field, with zeros after it.
  WireRecord unterminated = encode(sample());
  constexpr std::size_t kText = 26 * sizeof(std::int64_t);  // after the fields
  std::memset(unterminated.data() + kText, 'x', kWireRecordBytes - kText);
  EXPECT_THROW(decode(unterminated), Error);
  WireRecord trailing = encode(sample());
  trailing[kWireRecordBytes - 1] = 'x';
  EXPECT_THROW(decode(trailing), Error);
}

// Uneven K-slices under auto, as two NCCL ranks' planners see them: their
// records cross the wire and every rank agrees on one algorithm both can
// run, with the reasons that travelled.
TEST(AgreementWire, UnevenKRecordsAgreeOnOneAlgorithmAcrossTheWire) {
  core::BackendCaps caps;
  caps.name = "test";
  caps.native_supported = true;
  caps.default_tile_m = 16;
  caps.default_tile_n = 16;
  core::ResolvedOptions options;
  std::vector<core::CallRecord> records;
  for (int r = 0; r < 2; ++r) {
    core::CallRecord record;
    record.ok = true;
    record.world_size = 2;
    record.problem.op = core::OpKind::matmul_reduce_scatter;
    record.problem.world_size = 2;
    record.problem.rank = r;
    record.problem.m = 256;
    record.problem.n = 64;
    record.problem.k = r == 0 ? 64 : 12;  // rank 1's K-slice blocks native
    record.plan = core::plan(record.problem, caps, options);
    records.push_back(decode(encode(record)));
  }
  ASSERT_EQ(records[0].plan.algorithm, Algorithm::native);
  ASSERT_EQ(records[1].plan.algorithm, Algorithm::pipelined);
  EXPECT_EQ(core::find_disagreement(records), "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(core::agreed_plan(records, r).algorithm, Algorithm::pipelined) << r;
  }
  const std::string reason = core::agreed_plan(records, 0).reason;
  EXPECT_NE(reason.find("k (12) is not a multiple of 8"), std::string::npos) << reason;
  // Forced algorithms that differ stay a mismatch across the wire too.
  core::ResolvedOptions forced;
  forced.algorithm = Algorithm::native;
  forced.algorithm_forced = true;
  records[0].problem.k = 64;
  records[0].plan = core::plan(records[0].problem, caps, forced);
  records[0] = decode(encode(records[0]));
  forced.algorithm = Algorithm::decomposed;
  records[1].plan = core::plan(records[1].problem, caps, forced);
  records[1] = decode(encode(records[1]));
  EXPECT_NE(core::find_disagreement(records).find("ranks disagree on the algorithm"),
            std::string::npos)
      << core::find_disagreement(records);
}

}  // namespace
}  // namespace asynctp::core
