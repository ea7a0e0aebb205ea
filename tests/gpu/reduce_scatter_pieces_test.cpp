// gpu::reduce_scatter_pieces, the reduce-scatter's signal pieces: a rule on
// the call's facts alone, so these tests need no GPU. Two pieces only where
// the native grid feeds the arrival link's model, a chunk splits into two
// whole tile rows, and the link carries a chunk slower than the grid
// computes one (a chunk's m n elements over the link against its 2 m n k
// flops at the grid's rate: k < rate x element bytes / (2 x link rate)).
#include <gtest/gtest.h>

#include <cstdint>

#include "gpu/call_check.hpp"

namespace asynctp {
namespace {

constexpr double kGridTflops = 600;  // what the CUDA backend reports for sm_90
constexpr std::int64_t kTileRows = 256;

gpu::CallSite site(core::LinkFacts::Kind kind, double gbps) {
  gpu::CallSite s;
  s.world_size = 8;
  s.link.kind = kind;
  s.link.gbps = gbps;
  return s;
}

core::ProblemDesc reduce_scatter(std::int64_t m, std::int64_t k, int world = 8) {
  core::ProblemDesc p;
  p.op = core::OpKind::matmul_reduce_scatter;
  p.world_size = world;
  p.m = m;
  p.n = 8192;
  p.k = k;
  p.dtype = DType::bf16;
  return p;
}

int pieces(const gpu::CallSite& s, const core::ProblemDesc& p, std::int64_t rows = kTileRows,
           double tflops = kGridTflops) {
  return gpu::reduce_scatter_pieces(s, p, rows, tflops);
}

TEST(ReduceScatterPieces, TwoWhereTheModelledLinkIsTheSlower) {
  const gpu::CallSite at400 = site(core::LinkFacts::Kind::arrival, 400);
  // At 400 GB/s the threshold is k < 600e12 x 2 / (2 x 400e9) = 1500.
  EXPECT_EQ(2, pieces(at400, reduce_scatter(1024, 1024)));
  EXPECT_EQ(2, pieces(at400, reduce_scatter(1024, 1496)));
  EXPECT_EQ(1, pieces(at400, reduce_scatter(1024, 1504)));
  EXPECT_EQ(1, pieces(at400, reduce_scatter(1024, 2048)));
  EXPECT_EQ(1, pieces(at400, reduce_scatter(1024, 3584)));
  // A slower link moves it up (100 GB/s: k < 6000), a faster one down.
  EXPECT_EQ(2, pieces(site(core::LinkFacts::Kind::arrival, 100), reduce_scatter(1024, 3584)));
  EXPECT_EQ(1, pieces(site(core::LinkFacts::Kind::arrival, 1600), reduce_scatter(1024, 1024)));
  // fp32 partials cross the link in twice the bytes: twice the threshold.
  core::ProblemDesc fp32 = reduce_scatter(1024, 2048);
  fp32.dtype = DType::fp32;
  EXPECT_EQ(2, pieces(at400, fp32));
}

TEST(ReduceScatterPieces, OneWhereAnyConditionFails) {
  const gpu::CallSite at400 = site(core::LinkFacts::Kind::arrival, 400);
  const core::ProblemDesc linkbound = reduce_scatter(1024, 1024);
  ASSERT_EQ(2, pieces(at400, linkbound));
  // Copies over PCIe and the NCCL transport ship whole chunks.
  EXPECT_EQ(1, pieces(site(core::LinkFacts::Kind::pcie, 400), linkbound));
  EXPECT_EQ(1, pieces(site(core::LinkFacts::Kind::nccl, 400), linkbound));
  EXPECT_EQ(1, pieces(site(core::LinkFacts::Kind::unknown, 400), linkbound));
  // No link figure, no grid rate, or a library GEMM (no tile rows).
  EXPECT_EQ(1, pieces(site(core::LinkFacts::Kind::arrival, 0), linkbound));
  EXPECT_EQ(1, pieces(at400, linkbound, kTileRows, 0));
  EXPECT_EQ(1, pieces(at400, linkbound, 0));
  // A chunk that does not split into two whole tile rows.
  EXPECT_EQ(1, pieces(at400, reduce_scatter(256, 1024)));
  EXPECT_EQ(1, pieces(at400, reduce_scatter(768, 1024)));
  EXPECT_EQ(2, pieces(at400, reduce_scatter(512, 1024)));
  // One rank ships nothing.
  EXPECT_EQ(1, pieces(at400, reduce_scatter(1024, 1024, /*world=*/1)));
}

}  // namespace
}  // namespace asynctp
