// Records from other processes (the NCCL transport's wire) may carry any
// numbers: a verdict on them must not overflow. Found by
// tests/fuzz/agreement_wire_fuzz.cpp (M = m * W overflowed in the message).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/agreement.hpp"

namespace asynctp::core {
namespace {

CallRecord reduce_scatter_record(int rank, int world, std::int64_t m) {
  CallRecord r;
  r.ok = true;
  r.world_size = world;
  r.problem.op = OpKind::matmul_reduce_scatter;
  r.problem.world_size = world;
  r.problem.rank = rank;
  r.problem.m = m;
  r.problem.n = 16;
  r.problem.k = 16;
  return r;
}

TEST(AgreementWildRecords, RowsThatOverflowAreNamedNotWrapped) {
  const std::int64_t huge = std::int64_t{1} << 62;  // times 4 wraps to 0
  const std::string verdict = find_disagreement(
      {reduce_scatter_record(0, 4, 16), reduce_scatter_record(1, 4, huge)});
  EXPECT_NE(std::string::npos, verdict.find("ranks disagree on a rows (M): rank 0 has 64, rank 1 "
                                            "has 4611686018427387904 x 4"))
      << verdict;
}

}  // namespace
}  // namespace asynctp::core
