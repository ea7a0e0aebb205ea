// Every argument rule of fused_all_gather_matmul: each breach must raise
// Error(invalid_argument) whose message starts with the argument's name and
// states the rule, so a user can fix the call without reading the source.
// Validation reads metadata only, so the views point at fake, aligned,
// far-apart addresses and may describe tensors far larger than memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "asynctp/error.hpp"
#include "core/validate.hpp"
#include "support/expect_error.hpp"
#include "support/printers.hpp"

namespace asynctp::core {
namespace {

void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

constexpr int kWorld = 4;
constexpr std::int64_t kM = 32, kN = 48, kK = 64;

// A valid call: W=4, m=32, n=48, k=64, bf16, each tensor in its own 16 MiB.
struct Call {
  int world = kWorld;
  int rank = 1;
  DeviceKind device = DeviceKind::cpu;
  TensorView a = TensorView::row_major(fake(0x1000000), DType::bf16, kM, kK);
  TensorView b = TensorView::row_major(fake(0x2000000), DType::bf16, kK, kN);
  TensorView c = TensorView::row_major(fake(0x3000000), DType::bf16, kWorld * kM, kN);
  TensorView g = TensorView::row_major(fake(0x4000000), DType::bf16, kWorld * kM, kK);
  bool with_gathered = true;

  ProblemDesc validate() const {
    return validate_fused_all_gather_matmul(world, rank, device, a, b, c,
                                            with_gathered ? &g : nullptr);
  }
};

void expect_rejected(const Call& call, const std::string& argument, const std::string& phrase) {
  asynctp_test::expect_invalid_argument([&] { call.validate(); }, argument, phrase);
}

// The four tensors by name, so each per-tensor rule is tried on all of them.
using Pick = std::function<TensorView&(Call&)>;
const std::vector<std::pair<std::string, Pick>>& tensors() {
  static const std::vector<std::pair<std::string, Pick>> all = {
      {"a_shard", [](Call& c) -> TensorView& { return c.a; }},
      {"b", [](Call& c) -> TensorView& { return c.b; }},
      {"c_out", [](Call& c) -> TensorView& { return c.c; }},
      {"a_gathered_out", [](Call& c) -> TensorView& { return c.g; }},
  };
  return all;
}

TEST(Validate, HappyPathDescribesTheProblem) {
  Call call;
  const ProblemDesc p = call.validate();
  EXPECT_EQ(p.world_size, kWorld);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.m, kM);
  EXPECT_EQ(p.n, kN);
  EXPECT_EQ(p.k, kK);
  EXPECT_EQ(p.gathered_rows(), kWorld * kM);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(p.b_layout, Layout::row_major);
  EXPECT_TRUE(p.gathered_out);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * kWorld * kM * kN * kK);
}

TEST(Validate, HappyPathColumnMajorBNoGatheredOtherDtypesAndDevices) {
  Call call;
  call.b = TensorView::col_major(call.b.data, DType::bf16, kK, kN);
  call.with_gathered = false;
  ProblemDesc p = call.validate();
  EXPECT_EQ(p.b_layout, Layout::col_major);
  EXPECT_FALSE(p.gathered_out);

  for (DType dtype : {DType::fp16, DType::fp32}) {
    Call typed;
    typed.a.dtype = typed.b.dtype = typed.c.dtype = typed.g.dtype = dtype;
    EXPECT_EQ(typed.validate().dtype, dtype);
  }
  // Validation is backend-neutral: a CUDA communicator takes CUDA tensors.
  Call cuda;
  cuda.device = DeviceKind::cuda;
  for (auto& [name, pick] : tensors()) pick(cuda).device = {DeviceKind::cuda, 3};
  EXPECT_NO_THROW(cuda.validate());
  // A single rank is a valid group; the last rank is a valid rank.
  Call single;
  single.world = 1;
  single.rank = 0;
  single.c.rows = kM;
  single.g.rows = kM;
  EXPECT_EQ(single.validate().gathered_rows(), kM);
  Call last;
  last.rank = kWorld - 1;
  EXPECT_EQ(last.validate().rank, kWorld - 1);
}

TEST(Validate, NullPointer) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    Call call;
    pick(call).data = nullptr;
    expect_rejected(call, name, "must not be null");
  }
}

TEST(Validate, NonPositiveShape) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{0, 8}, {8, 0}, {-1, 8},
                              {8, -5}}) {
      Call call;
      pick(call).rows = rows;
      pick(call).cols = cols;
      expect_rejected(call, name, "shape must be positive");
    }
  }
}

TEST(Validate, TwoToThe31ElementsIsRejectedOneLessIsAccepted) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    Call call;
    pick(call).rows = std::int64_t{1} << 16;
    pick(call).cols = std::int64_t{1} << 15;  // exactly 2^31 elements
    expect_rejected(call, name, "2^31");
    // rows * cols overflowing int64 must not wrap into a small count.
    Call huge;
    pick(huge).rows = std::numeric_limits<std::int64_t>::max() / 2 + 1;
    pick(huge).cols = 2;
    expect_rejected(huge, name, "2^31");
  }
  // A consistent single-rank problem whose c_out has 2^31 - 1 elements is
  // within the 32-bit limit (the tensors are ~4 GiB apart, so no overlap).
  const std::int64_t m = (std::int64_t{1} << 31) - 1;
  Call edge;
  edge.world = 1;
  edge.rank = 0;
  edge.a = TensorView::row_major(fake(0x100000000000), DType::bf16, m, 1);
  edge.b = TensorView::row_major(fake(0x200000000000), DType::bf16, 1, 1);
  edge.c = TensorView::row_major(fake(0x300000000000), DType::bf16, m, 1);
  edge.g = TensorView::row_major(fake(0x400000000000), DType::bf16, m, 1);
  EXPECT_EQ(edge.validate().m, m);
  edge.c.rows = m + 1;  // one more element: over the limit
  expect_rejected(edge, "c_out", "2^31");
}

TEST(Validate, MisalignedPointer) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    for (std::uintptr_t offset : {2u, 4u, 8u, 14u}) {
      Call call;
      auto& t = pick(call);
      t.data = fake(reinterpret_cast<std::uintptr_t>(t.data) + offset);
      expect_rejected(call, name, "16-byte aligned");
    }
  }
}

TEST(Validate, WrongDeviceKind) {
  for (auto& [name, pick] : tensors()) {
    SCOPED_TRACE(name);
    Call call;
    pick(call).device.kind = DeviceKind::cuda;
    expect_rejected(call, name, "device kind (cpu), got cuda");
  }
  Call hip;
  hip.device = DeviceKind::hip;  // communicator on hip, tensors on cpu
  expect_rejected(hip, "a_shard", "device kind (hip), got cpu");
}

TEST(Validate, ShardOutputsAndGatheredMustBeRowMajor) {
  for (const std::string name : {"a_shard", "c_out", "a_gathered_out"}) {
    SCOPED_TRACE(name);
    const Pick pick = [&] {
      for (auto& [n, p] : tensors()) {
        if (n == name) return p;
      }
      return Pick{};
    }();
    Call transposed;
    auto& t = pick(transposed);
    t = TensorView::col_major(t.data, t.dtype, t.rows, t.cols);
    expect_rejected(transposed, name, "must be contiguous row-major");
    Call padded;  // rows padded to a larger stride
    pick(padded).row_stride += 8;
    expect_rejected(padded, name, "must be contiguous row-major");
  }
}

TEST(Validate, BMustBeRowOrColumnMajor) {
  Call strided;  // every other column
  strided.b.col_stride = 2;
  strided.b.row_stride = 2 * kN;
  expect_rejected(strided, "b", "row-major or column-major");
  Call padded_col;  // column-major with padded columns
  padded_col.b = TensorView::col_major(padded_col.b.data, DType::bf16, kK, kN);
  padded_col.b.col_stride = kK + 8;
  expect_rejected(padded_col, "b", "row-major or column-major");
  Call broadcast;
  broadcast.b.row_stride = 0;
  broadcast.b.col_stride = 0;
  expect_rejected(broadcast, "b", "row-major or column-major");
}

TEST(Validate, DtypesMustMatchTheShard) {
  for (const char* name : {"b", "c_out", "a_gathered_out"}) {
    SCOPED_TRACE(name);
    for (auto& [n, pick] : tensors()) {
      if (n != name) continue;
      Call call;
      pick(call).dtype = DType::fp16;
      expect_rejected(call, name, "dtype must equal a_shard's (bf16), got fp16");
    }
  }
  // Changing the shard's dtype makes every other tensor the odd one out; b
  // is checked first.
  Call shard;
  shard.a.dtype = DType::fp32;
  expect_rejected(shard, "b", "a_shard's (fp32), got bf16");
}

TEST(Validate, InnerDimensionsMustAgree) {
  Call call;
  call.b.rows = kK + 8;
  call.b.row_stride = kN;  // still row-major
  expect_rejected(call, "b", "rows must equal a_shard's columns (k = 64), got 72");
}

TEST(Validate, OutputShapes) {
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{kWorld * kM + 1, kN},
                            {kM, kN}, {kWorld * kM, kN - 8}}) {
    Call call;
    call.c = TensorView::row_major(call.c.data, DType::bf16, rows, cols);
    expect_rejected(call, "c_out", "shape must be (world_size * m) x n = 128x48");
  }
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{kWorld * kM - 1, kK},
                            {kWorld * kM, kN}, {kM, kK}}) {
    Call call;
    call.g = TensorView::row_major(call.g.data, DType::bf16, rows, cols);
    expect_rejected(call, "a_gathered_out", "shape must be (world_size * m) x k = 128x64");
  }
}

TEST(Validate, OutputsMustNotOverlapInputsOrEachOther) {
  const auto at = [](const TensorView& t, std::uintptr_t byte_offset) {
    return fake(reinterpret_cast<std::uintptr_t>(t.data) + byte_offset);
  };
  {
    Call call;  // c_out aliases a_shard exactly
    call.c.data = call.a.data;
    expect_rejected(call, "c_out", "must not overlap a_shard");
  }
  {
    Call call;  // c_out starts inside the last 16 bytes of b
    call.c.data = at(call.b, kK * kN * 2 - 16);
    expect_rejected(call, "c_out", "must not overlap b");
  }
  {
    Call call;  // b starts inside c_out
    call.b.data = at(call.c, 1024);
    expect_rejected(call, "c_out", "must not overlap b");
  }
  {
    Call call;
    call.g.data = at(call.a, 32);
    expect_rejected(call, "a_gathered_out", "must not overlap a_shard");
  }
  {
    Call call;
    call.g.data = call.b.data;
    expect_rejected(call, "a_gathered_out", "must not overlap b");
  }
  {
    Call call;
    call.g.data = at(call.c, kWorld * kM * kN * 2 - 16);
    expect_rejected(call, "a_gathered_out", "must not overlap c_out");
  }
  {
    Call call;  // adjacent is fine: c_out begins exactly where a_shard ends
    call.c.data = at(call.a, kM * kK * 2);
    EXPECT_NO_THROW(call.validate());
  }
}

TEST(Validate, RankAndWorldSize) {
  for (int world : {0, -3}) {
    Call call;
    call.world = world;
    call.rank = 0;
    expect_rejected(call, "comm", "world size must be at least 1");
  }
  for (int rank : {-1, kWorld, kWorld + 5}) {
    Call call;
    call.rank = rank;
    expect_rejected(call, "comm", "rank must lie in [0, world size)");
  }
  // Shapes follow the communicator's world size: c_out sized for W=4 is
  // wrong for W=2.
  Call call;
  call.world = 2;
  expect_rejected(call, "c_out", "64x48, got 128x48");
}

TEST(Validate, CheckedElementCount) {
  std::int64_t count = -1;
  EXPECT_TRUE(checked_element_count(3, 5, &count));
  EXPECT_EQ(count, 15);
  EXPECT_TRUE(checked_element_count(0, 5, &count));
  EXPECT_EQ(count, 0);
  EXPECT_FALSE(checked_element_count(-1, 5, &count));
  EXPECT_FALSE(checked_element_count(std::int64_t{1} << 32, std::int64_t{1} << 32, &count));
}

}  // namespace
}  // namespace asynctp::core
