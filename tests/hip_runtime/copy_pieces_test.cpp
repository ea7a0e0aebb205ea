// The shared producer's copies on HIP (gpu/copy.hpp built with
// ASYNCTP_GPU_HIP): cut into the whole-row pieces of at most 1 MiB that the
// AMD deadlock rule asks for (src/hip/deadlock_rules), the same cut as
// hip::copy_pieces.
//
//   HipCopyPieces.TheRuntimeLimitIsTheDeadlockRulesLimit
//   HipCopyPieces.SameCutAsTheDeadlockRule
//       for several chunk shapes, the piece size copy_rows uses times the
//       number of pieces covers the chunk exactly as hip::copy_pieces does.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "gpu/copy.hpp"
#include "hip/deadlock_rules.hpp"

namespace asynctp {
namespace {

TEST(HipCopyPieces, TheRuntimeLimitIsTheDeadlockRulesLimit) {
  EXPECT_EQ(hip::kMaxCopyPieceBytes, gpu::rt::kMaxCopyBytes);
}

TEST(HipCopyPieces, SameCutAsTheDeadlockRule) {
  struct Shape {
    std::size_t rows, row_bytes;
  };
  for (const Shape s : {Shape{1024, 16384}, Shape{256, 2 * 8192}, Shape{100, 3000},
                        Shape{8, 3u << 20}, Shape{1, 64}}) {
    const std::size_t bytes = s.rows * s.row_bytes;
    const std::size_t piece = gpu::copy_piece_bytes(bytes, s.row_bytes);
    const std::vector<hip::CopyPiece> rule = hip::copy_pieces(s.rows, s.row_bytes);
    ASSERT_FALSE(rule.empty());
    EXPECT_EQ(rule.front().bytes, piece) << s.rows << " rows of " << s.row_bytes;
    EXPECT_EQ(0u, piece % s.row_bytes) << "a piece splits a row";
    EXPECT_EQ(rule.size(), (bytes + piece - 1) / piece) << s.rows << " rows of " << s.row_bytes;
    EXPECT_TRUE(piece <= hip::kMaxCopyPieceBytes || piece == s.row_bytes);
  }
}

}  // namespace
}  // namespace asynctp
