// The AMD kernel's data layout (src/hip/mfma_layout.hpp), checked where no
// AMD GPU is: the operand and result layouts of both bf16 instructions
// (32x32x8, and gfx950's 32x32x16) are one-to-one and pinned to the
// documented ones, each sub-step's k permutation covers the K step once, an
// emulated instruction and an emulated 256 x 256 block tile with each
// instruction (mfma_emulation.cpp, built from the same functions the kernel
// uses) match float64, the persistent grid leaves a CU per shader engine,
// and the bf16 epilogue rounds to nearest even.
#include "hip/mfma_layout.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/dtype_convert.hpp"
#include "core/reference.hpp"
#include "hip/mfma_emulation.hpp"
#include "support/host_tensor.hpp"
#include "support/seed.hpp"

namespace asynctp::hip {
namespace {

using asynctp_test::HostTensor;
using asynctp_test::Seed;
using layout::RowCol;

template <class Element>
void expect_one_to_one(Element element, int items, int rows, int cols, const char* what) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int item = 0; item < items; ++item) {
      const RowCol e = element(lane, item);
      ASSERT_GE(e.row, 0) << what;
      ASSERT_LT(e.row, rows) << what;
      ASSERT_GE(e.col, 0) << what;
      ASSERT_LT(e.col, cols) << what;
      EXPECT_TRUE(seen.insert({e.row, e.col}).second)
          << what << ": (" << e.row << ", " << e.col << ") held twice (lane " << lane << ")";
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(rows * cols), seen.size()) << what << ": not covered";
}

template <class Mfma>
void expect_operands_one_to_one() {
  SCOPED_TRACE("K = " + std::to_string(Mfma::k));
  expect_one_to_one(Mfma::a_element, Mfma::items, 32, Mfma::k, "A");
  expect_one_to_one(Mfma::b_element, Mfma::items, Mfma::k, 32, "B");
}

TEST(MfmaLayout, OperandsAndResultAreOneToOne) {
  expect_operands_one_to_one<layout::Mfma32x32x8>();
  expect_operands_one_to_one<layout::Mfma32x32x16>();
  expect_one_to_one(layout::c_element, layout::kCItems, 32, 32, "C");
  // Spot checks against the instructions' documented layouts (the header's
  // table): the emulation reads and writes through these same functions, so
  // a wrong but one-to-one layout would pass the tests below; only these pin
  // it to the hardware's (and the first hardware run will confirm).
  using X8 = layout::Mfma32x32x8;
  using X16 = layout::Mfma32x32x16;
  EXPECT_EQ(3, X8::a_element(35, 3).row);  // A[i][k]: lane i + 32 (k / 4), item k % 4
  EXPECT_EQ(7, X8::a_element(35, 3).col);
  EXPECT_EQ(6, X8::b_element(33, 2).row);  // B[k][j]: lane j + 32 (k / 4)
  EXPECT_EQ(1, X8::b_element(33, 2).col);
  EXPECT_EQ(3, X16::a_element(35, 7).row);  // A[i][k]: lane i + 32 (k / 8), item k % 8
  EXPECT_EQ(15, X16::a_element(35, 7).col);
  EXPECT_EQ(5, X16::a_element(3, 5).col);
  EXPECT_EQ(10, X16::b_element(33, 2).row);  // B[k][j]: lane j + 32 (k / 8)
  EXPECT_EQ(1, X16::b_element(33, 2).col);
  EXPECT_EQ(20, layout::c_element(33, 8).row);  // D[i][j]: lane j + 32 ((i / 4) % 2),
  EXPECT_EQ(1, layout::c_element(33, 8).col);   //          item 4 (i / 8) + i % 4
  EXPECT_EQ(31, layout::c_element(63, 15).row);
  EXPECT_EQ(0, layout::c_element(0, 0).row);
}

// The sub-steps' k permutation: every k of the K step used exactly once,
// and a lane's items over all sub-steps are its 16 consecutive k.
template <class Mfma>
void expect_step_k_covers_the_step() {
  SCOPED_TRACE("K = " + std::to_string(Mfma::k));
  std::set<int> seen;
  for (int step = 0; step < Mfma::steps; ++step) {
    for (int kk = 0; kk < Mfma::k; ++kk) {
      const int k = Mfma::step_k(step, kk);
      ASSERT_GE(k, 0);
      ASSERT_LT(k, layout::BlockTile::k);
      EXPECT_TRUE(seen.insert(k).second) << "k " << k << " used twice";
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(layout::BlockTile::k), seen.size());
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int step = 0; step < Mfma::steps; ++step) {
      for (int item = 0; item < Mfma::items; ++item) {
        EXPECT_EQ(layout::BlockTile::lane_k * (lane / 32) + Mfma::items * step + item,
                  Mfma::step_k(step, Mfma::a_element(lane, item).col));
        EXPECT_EQ(Mfma::step_k(step, Mfma::a_element(lane, item).col),
                  Mfma::step_k(step, Mfma::b_element(lane, item).row));
      }
    }
  }
}

TEST(MfmaLayout, SubStepsUseEveryKOfTheStepOnce) {
  expect_step_k_covers_the_step<layout::Mfma32x32x8>();
  expect_step_k_covers_the_step<layout::Mfma32x32x16>();
}

template <class Mfma>
void expect_one_instruction_matches_float64(emulation::Instruction instruction) {
  SCOPED_TRACE("K = " + std::to_string(Mfma::k));
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  std::normal_distribution<float> normal;
  float a[32][Mfma::k], b[Mfma::k][32];
  emulation::LaneOperand la{}, lb{};
  for (int lane = 0; lane < 64; ++lane) {
    for (int item = 0; item < Mfma::items; ++item) {
      const RowCol ea = Mfma::a_element(lane, item);
      const std::uint16_t abits = core::float_to_bf16(normal(rng));
      la[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] = abits;
      a[ea.row][ea.col] = core::bf16_to_float(abits);
      const RowCol eb = Mfma::b_element(lane, item);
      const std::uint16_t bbits = core::float_to_bf16(normal(rng));
      lb[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] = bbits;
      b[eb.row][eb.col] = core::bf16_to_float(bbits);
    }
  }
  emulation::LaneC acc{};
  for (auto& lane : acc) lane.fill(1.0f);  // C = 1: the instruction adds
  emulation::mfma_32x32_bf16(instruction, la, lb, acc);
  for (int lane = 0; lane < 64; ++lane) {
    for (int item = 0; item < 16; ++item) {
      const RowCol e = layout::c_element(lane, item);
      double want = 1.0;
      for (int k = 0; k < Mfma::k; ++k) want += static_cast<double>(a[e.row][k]) * b[k][e.col];
      EXPECT_NEAR(want, acc[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)],
                  1e-5 * (1.0 + std::abs(want)))
          << "D[" << e.row << "][" << e.col << "] from lane " << lane << " item " << item;
    }
  }
}

TEST(MfmaLayout, OneInstructionMatchesFloat64) {
  EXPECT_EQ(8, emulation::instruction_k(emulation::Instruction::mfma_32x32x8_bf16));
  EXPECT_EQ(16, emulation::instruction_k(emulation::Instruction::mfma_32x32x16_bf16));
  expect_one_instruction_matches_float64<layout::Mfma32x32x8>(
      emulation::Instruction::mfma_32x32x8_bf16);
  expect_one_instruction_matches_float64<layout::Mfma32x32x16>(
      emulation::Instruction::mfma_32x32x16_bf16);
}

// Four block tiles cover a 300 x 270 C (the last ones clipped); K = 104 is
// four K steps, the last one partial (both LDS stages used twice). Every
// element of C written, within bf16's tolerance, with either instruction and
// either B layout.
TEST(MfmaLayout, BlockTilesMatchFloat64) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (const auto instruction :
       {emulation::Instruction::mfma_32x32x8_bf16, emulation::Instruction::mfma_32x32x16_bf16}) {
    for (const bool b_col_major : {false, true}) {
      SCOPED_TRACE(std::string(b_col_major ? "B column-major" : "B row-major") +
                   ", K = " + std::to_string(emulation::instruction_k(instruction)));
      const std::int64_t m = 300, n = 270, k = 104;
      HostTensor a(DType::bf16, m, k), b(DType::bf16, k, n, b_col_major), c(DType::bf16, m, n);
      a.fill_normal(rng);
      b.fill_normal(rng);
      c.fill_bytes(0xff);  // NaN in bf16: anything left unwritten shows
      for (std::int64_t row = 0; row < m; row += layout::BlockTile::m) {
        for (std::int64_t col = 0; col < n; col += layout::BlockTile::n) {
          emulation::block_tile(a.view(), b.view(), c.view(), row, col, instruction);
        }
      }
      const std::vector<double> reference = core::reference_all_gather_matmul({a.view()}, b.view());
      const core::Comparison cmp = core::compare_to_reference(c.view(), reference);
      EXPECT_EQ(0, cmp.unwritten);
      EXPECT_EQ(0, cmp.non_finite);
      EXPECT_TRUE(cmp.ok(core::error_tolerance(DType::bf16)))
          << "relative Frobenius error " << cmp.relative_frobenius_error;
    }
  }
}

TEST(MfmaLayout, PersistentGridLeavesOneCuPerShaderEngine) {
  // MI300X: 304 CUs in 32 shader engines (38 per XCD, 4 engines per XCD);
  // with a (hypothetical) even 9.5 it rounds down per engine: use 9 and 10.
  EXPECT_EQ(1 * 8 * 32, layout::persistent_grid(1, 9, 32));
  EXPECT_EQ(2 * 9 * 32, layout::persistent_grid(2, 10, 32));
  for (int cus = 2; cus <= 16; ++cus) {
    for (int engines = 1; engines <= 40; ++engines) {
      const int grid = layout::persistent_grid(1, cus, engines);
      EXPECT_EQ(engines, cus * engines - grid) << "one free CU per engine";
    }
  }
}

TEST(MfmaLayout, Bf16EpilogueRoundsToNearestEven) {
  const auto round = [](float v) {
    return layout::bf16_from_float_bits(std::bit_cast<std::uint32_t>(v));
  };
  EXPECT_EQ(0x3f80, round(1.0f));
  EXPECT_EQ(0x3f80, round(std::bit_cast<float>(0x3f808000u)));  // tie: stays even
  EXPECT_EQ(0x3f82, round(std::bit_cast<float>(0x3f818000u)));  // tie: up to even
  EXPECT_EQ(0x3f81, round(std::bit_cast<float>(0x3f808001u)));  // above the tie
  EXPECT_EQ(0x7f80, round(std::bit_cast<float>(0x7f7fffffu)));  // overflow to infinity
  EXPECT_TRUE(std::isnan(core::bf16_to_float(round(std::nanf("")))));
  // And it agrees with the rest of the library's conversion on random values.
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 100000; ++i) {
    const float v = std::bit_cast<float>(bits(rng));
    if (std::isnan(v)) continue;
    ASSERT_EQ(core::float_to_bf16(v), round(v)) << std::hex << std::bit_cast<std::uint32_t>(v);
  }
}

}  // namespace
}  // namespace asynctp::hip
