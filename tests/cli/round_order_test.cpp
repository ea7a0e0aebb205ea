// The order of a round's measurements (tools/asynctp/round_order.hpp): the
// warmup round keeps the rows' order; over `count` timed rounds every
// measurement takes every position once, and each round is a permutation.
#include "../../tools/asynctp/round_order.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <vector>

namespace asynctp::tool {
namespace {

TEST(RoundOrder, WarmupKeepsTheOrderAndTimedRoundsRotateIt) {
  for (std::size_t count : {1u, 2u, 4u, 5u}) {
    SCOPED_TRACE("count " + std::to_string(count));
    for (std::size_t turn = 0; turn < count; ++turn) EXPECT_EQ(at_turn(0, turn, count), turn);
    // positions[m]: the turns measurement m took over `count` timed rounds.
    std::vector<std::set<std::size_t>> positions(count);
    for (int round = 1; round <= static_cast<int>(count); ++round) {
      std::set<std::size_t> seen;
      for (std::size_t turn = 0; turn < count; ++turn) {
        const std::size_t m = at_turn(round, turn, count);
        ASSERT_LT(m, count);
        seen.insert(m);
        positions[m].insert(turn);
      }
      EXPECT_EQ(seen.size(), count) << "round " << round << " is not a permutation";
    }
    for (std::size_t m = 0; m < count; ++m) {
      EXPECT_EQ(positions[m].size(), count) << "measurement " << m;
    }
  }
  // Round 1 is the rows' own order; round 2 starts with the second row.
  EXPECT_EQ(at_turn(1, 0, 4), 0u);
  EXPECT_EQ(at_turn(2, 0, 4), 1u);
  EXPECT_EQ(at_turn(2, 3, 4), 0u);
}

}  // namespace
}  // namespace asynctp::tool
