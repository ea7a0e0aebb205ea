// The AMD producer's deadlock rules (src/hip/deadlock_rules): copies in
// whole-row pieces of at most 1 MiB that tile the chunk exactly, the hardware
// queue count from GPU_MAX_HW_QUEUES (or HIP's default), and the verdict on
// streams that would share queues.
#include "hip/deadlock_rules.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::hip {
namespace {

core::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(HipDeadlockRules, CopyPiecesAreWholeRowsOfAtMostOneMiBThatTileTheChunk) {
  struct Case {
    std::size_t rows, row_bytes;
  };
  for (const Case c :
       {Case{1024, 16384}, Case{1024, 16384 + 2}, Case{3, 5000000}, Case{256, 2560}, Case{1, 8}}) {
    SCOPED_TRACE(std::to_string(c.rows) + " rows of " + std::to_string(c.row_bytes) + " bytes");
    const auto pieces = copy_pieces(c.rows, c.row_bytes);
    std::size_t next = 0;
    for (const CopyPiece& p : pieces) {
      EXPECT_EQ(next, p.offset) << "gap or overlap";
      EXPECT_EQ(0u, p.bytes % c.row_bytes) << "a piece splits a row";
      EXPECT_TRUE(p.bytes <= kMaxCopyPieceBytes || p.bytes == c.row_bytes) << p.bytes;
      next = p.offset + p.bytes;
    }
    EXPECT_EQ(c.rows * c.row_bytes, next) << "the chunk is not covered";
  }
  EXPECT_EQ(16u, copy_pieces(1024, 16384).size());  // 16 MiB chunk: 16 pieces of 1 MiB
  EXPECT_TRUE(copy_pieces(0, 16).empty());
}

TEST(HipDeadlockRules, HardwareQueuesFromTheEnvironment) {
  EXPECT_EQ(kDefaultHardwareQueues, hardware_queues(env_of({})));
  EXPECT_EQ(8, hardware_queues(env_of({{"GPU_MAX_HW_QUEUES", "8"}})));
  for (const char* bad : {"0", "-2", "four", "", "4096"}) {
    try {
      (void)hardware_queues(env_of({{"GPU_MAX_HW_QUEUES", bad}}));
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string::npos, std::string(e.what()).find("GPU_MAX_HW_QUEUES: must be"))
          << e.what();
    }
  }
}

TEST(HipDeadlockRules, StreamsMustFitTheQueues) {
  EXPECT_FALSE(queue_blocker(4, 4));
  EXPECT_FALSE(queue_blocker(3, 8));
  const auto why = queue_blocker(4, 1);
  ASSERT_TRUE(why);
  EXPECT_NE(std::string::npos, why->find("4 streams would share 1 hardware queue ")) << *why;
  EXPECT_NE(std::string::npos, why->find("never start")) << *why;
}

}  // namespace
}  // namespace asynctp::hip
