// The agreement records that cross processes (src/core/agreement_wire: NCCL
// ranks all-gather them, CPU process ranks share them in shared memory):
// every field survives the trip, long errors are cut visibly, and a block
// from another format is refused rather than misread. No GPU needed.
#include "core/agreement_wire.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"

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
  r.grows_workspace = true;
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

}  // namespace
}  // namespace asynctp::core
