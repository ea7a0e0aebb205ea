// Every argument rule of fused_matmul_reduce_scatter: each breach must raise
// Error(invalid_argument) whose message starts with the argument's name (a,
// b, out: the public function's parameters) and states the rule. Validation
// reads metadata only, so the views point at fake, aligned, far-apart
// addresses and may describe tensors far larger than memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "asynctp/error.hpp"
#include "core/validate.hpp"
#include "support/expect_error.hpp"
#include "support/printers.hpp"

namespace asynctp::core {
namespace {

void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

constexpr int kWorld = 4;
constexpr std::int64_t kRows = 128, kN = 48, kK = 24;  // M = 128: 32 rows per rank

// A valid call: W=4, M=128, n=48, this rank's k=24, bf16.
struct Call {
  int world = kWorld;
  int rank = 2;
  DeviceKind device = DeviceKind::cpu;
  TensorView a = TensorView::row_major(fake(0x1000000), DType::bf16, kRows, kK);
  TensorView b = TensorView::row_major(fake(0x2000000), DType::bf16, kK, kN);
  TensorView out = TensorView::row_major(fake(0x3000000), DType::bf16, kRows / kWorld, kN);

  ProblemDesc validate() const {
    return validate_fused_matmul_reduce_scatter(world, rank, device, a, b, out);
  }
};

void expect_rejected(const Call& call, const std::string& argument, const std::string& phrase) {
  asynctp_test::expect_invalid_argument([&] { call.validate(); }, argument, phrase);
}

using Pick = std::function<TensorView&(Call&)>;
const std::vector<std::pair<std::string, Pick>>& tensors() {
  static const std::vector<std::pair<std::string, Pick>> all = {
      {"a", [](Call& c) -> TensorView& { return c.a; }},
      {"b", [](Call& c) -> TensorView& { return c.b; }},
      {"out", [](Call& c) -> TensorView& { return c.out; }},
  };
  return all;
}

TEST(ValidateReduceScatter, HappyPathDescribesTheProblem) {
  const ProblemDesc p = Call{}.validate();
  EXPECT_EQ(p.op, OpKind::matmul_reduce_scatter);
  EXPECT_EQ(p.world_size, kWorld);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.m, kRows / kWorld);  // a chunk: the rows one rank receives
  EXPECT_EQ(p.gathered_rows(), kRows);
  EXPECT_EQ(p.n, kN);
  EXPECT_EQ(p.k, kK);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(p.b_layout, Layout::row_major);
  EXPECT_FALSE(p.gathered_out);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * kRows * kN * kK);  // this rank's partial GEMM
  EXPECT_NE(p.to_string().find("M=128"), std::string::npos) << p.to_string();
}

TEST(ValidateReduceScatter, ColumnMajorBOtherDtypesDevicesAndWorlds) {
  Call col;
  col.b = TensorView::col_major(col.b.data, DType::bf16, kK, kN);
  EXPECT_EQ(col.validate().b_layout, Layout::col_major);
  for (DType dtype : {DType::fp16, DType::fp32}) {
    Call typed;
    typed.a.dtype = typed.b.dtype = typed.out.dtype = dtype;
    EXPECT_EQ(typed.validate().dtype, dtype);
  }
  Call cuda;
  cuda.device = DeviceKind::cuda;
  for (auto& [name, pick] : tensors()) pick(cuda).device = {DeviceKind::cuda, 1};
  EXPECT_NO_THROW(cuda.validate());
  // One rank receives everything; an odd world size divides an odd M.
  Call single;
  single.world = 1;
  single.rank = 0;
  single.out.rows = kRows;
  EXPECT_EQ(single.validate().m, kRows);
  Call odd;
  odd.world = 3;
  odd.a.rows = 3 * 7;
  odd.out.rows = 7;
  EXPECT_EQ(odd.validate().m, 7);
}

TEST(ValidateReduceScatter, PerTensorRules) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    Call null;
    pick(null).data = nullptr;
    expect_rejected(null, name, "must not be null");
    Call empty;
    pick(empty).rows = 0;
    expect_rejected(empty, name, "shape must be positive");
    Call negative;
    pick(negative).cols = -2;
    expect_rejected(negative, name, "shape must be positive");
    Call misaligned;
    pick(misaligned).data = fake(reinterpret_cast<std::uintptr_t>(pick(misaligned).data) + 8);
    expect_rejected(misaligned, name, "16-byte aligned");
    Call device;
    pick(device).device.kind = DeviceKind::cuda;
    expect_rejected(device, name, "device kind (cpu), got cuda");
  }
}

TEST(ValidateReduceScatter, TwoToThe31ElementsIsRejected) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    Call call;
    pick(call).rows = std::int64_t{1} << 16;
    pick(call).cols = std::int64_t{1} << 15;  // exactly 2^31 elements
    expect_rejected(call, name, "fewer than 2^31 elements");
    Call huge;  // rows * cols overflowing int64 must not wrap
    pick(huge).rows = std::numeric_limits<std::int64_t>::max() / 2 + 1;
    pick(huge).cols = 2;
    expect_rejected(huge, name, "2^31");
  }
  // 2^31 - 1 elements in a is within the limit.
  const std::int64_t rows = (std::int64_t{1} << 31) - 1;
  Call edge;
  edge.world = 1;
  edge.rank = 0;
  edge.a = TensorView::row_major(fake(0x100000000000), DType::bf16, rows, 1);
  edge.b = TensorView::row_major(fake(0x200000000000), DType::bf16, 1, 1);
  edge.out = TensorView::row_major(fake(0x300000000000), DType::bf16, rows, 1);
  EXPECT_EQ(edge.validate().m, rows);
}

TEST(ValidateReduceScatter, LayoutRules) {
  for (const char* name : {"a", "out"}) {
    SCOPED_TRACE(name);
    for (auto& [n, pick] : tensors()) {
      if (n != name) continue;
      Call transposed;
      auto& t = pick(transposed);
      t = TensorView::col_major(t.data, t.dtype, t.rows, t.cols);
      expect_rejected(transposed, name, "must be contiguous row-major");
      Call padded;
      pick(padded).row_stride += 8;
      expect_rejected(padded, name, "must be contiguous row-major");
    }
  }
  Call strided;
  strided.b.col_stride = 2;
  strided.b.row_stride = 2 * kN;
  expect_rejected(strided, "b", "row-major or column-major");
}

TEST(ValidateReduceScatter, DtypesMustMatchA) {
  for (const char* name : {"b", "out"}) {
    SCOPED_TRACE(name);
    for (auto& [n, pick] : tensors()) {
      if (n != name) continue;
      Call call;
      pick(call).dtype = DType::fp32;
      expect_rejected(call, name, "dtype must equal a's (bf16), got fp32");
    }
  }
}

TEST(ValidateReduceScatter, RowsMustDivideAmongTheRanks) {
  Call call;
  call.a.rows = kRows + 2;
  expect_rejected(call, "a", "rows (M = 130) must be divisible by the world size (4)");
  Call odd;
  odd.world = 3;
  odd.rank = 0;
  expect_rejected(odd, "a", "rows (M = 128) must be divisible by the world size (3)");
}

TEST(ValidateReduceScatter, InnerDimensionsMustAgree) {
  Call call;
  call.b = TensorView::row_major(call.b.data, DType::bf16, kK + 8, kN);
  expect_rejected(call, "b", "rows must equal a's columns (this rank's k = 24), got 32");
}

TEST(ValidateReduceScatter, OutputShape) {
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{kRows, kN},
                            {kRows / kWorld + 1, kN},
                            {kRows / kWorld, kN + 8}}) {
    Call call;
    call.out = TensorView::row_major(call.out.data, DType::bf16, rows, cols);
    expect_rejected(call, "out", "shape must be (M / world_size) x n = 32x48");
  }
}

TEST(ValidateReduceScatter, OutMustNotOverlapTheInputs) {
  const auto at = [](const TensorView& t, std::uintptr_t byte_offset) {
    return fake(reinterpret_cast<std::uintptr_t>(t.data) + byte_offset);
  };
  Call on_a;
  on_a.out.data = at(on_a.a, kRows * kK * 2 - 16);
  expect_rejected(on_a, "out", "must not overlap a");
  Call on_b;
  on_b.b.data = at(on_b.out, 64);
  expect_rejected(on_b, "out", "must not overlap b");
  Call adjacent;
  adjacent.out.data = at(adjacent.a, kRows * kK * 2);
  EXPECT_NO_THROW(adjacent.validate());
}

TEST(ValidateReduceScatter, RankAndWorldSize) {
  Call none;
  none.world = 0;
  none.rank = 0;
  expect_rejected(none, "comm", "world size must be at least 1");
  Call outside;
  outside.rank = kWorld;
  expect_rejected(outside, "comm", "rank must lie in [0, world size)");
}

}  // namespace
}  // namespace asynctp::core
