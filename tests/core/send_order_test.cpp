// The reduce-scatter's send order and receive slots: each rank computes and
// ships the chunk of rank+1 first and its own chunk last; at every step the
// ranks ship to distinct owners (no owner receives two partials at once);
// and an owner's slot i holds exactly the partial shipped at step i.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/schedule.hpp"

namespace asynctp::core {
namespace {

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(SendOrder, OwnChunkLastAndAPermutation) {
  for (int world = 1; world <= 8; ++world) {
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("W=" + std::to_string(world) + " rank=" + std::to_string(rank));
      const std::vector<int> order = send_order(world, rank);
      ASSERT_EQ(order.size(), static_cast<std::size_t>(world));
      EXPECT_EQ(order.back(), rank);
      EXPECT_EQ(order.front(), (rank + 1) % world);
      std::vector<int> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, iota(world));
    }
  }
}

TEST(SendOrder, EveryStepShipsToDistinctOwners) {
  for (int world = 2; world <= 8; ++world) {
    for (int step = 0; step < world; ++step) {
      std::vector<int> owners;
      for (int rank = 0; rank < world; ++rank) {
        owners.push_back(send_order(world, rank)[static_cast<std::size_t>(step)]);
      }
      std::sort(owners.begin(), owners.end());
      EXPECT_EQ(owners, iota(world)) << "W=" << world << " step " << step;
    }
  }
}

TEST(PartialSlot, IsTheStepOfTheShipmentAndFillsEverySlotOnce) {
  for (int world = 1; world <= 8; ++world) {
    for (int owner = 0; owner < world; ++owner) {
      std::vector<int> slots;
      for (int source = 0; source < world; ++source) {
        if (source == owner) continue;
        const int slot = partial_slot(world, owner, source);
        const std::vector<int> order = send_order(world, source);
        EXPECT_EQ(order[static_cast<std::size_t>(slot)], owner)
            << "W=" << world << " owner " << owner << " source " << source;
        EXPECT_EQ(partial_source(world, owner, slot), source);
        slots.push_back(slot);
      }
      std::sort(slots.begin(), slots.end());
      EXPECT_EQ(slots, iota(world - 1)) << "W=" << world << " owner " << owner;
    }
  }
}

}  // namespace
}  // namespace asynctp::core
