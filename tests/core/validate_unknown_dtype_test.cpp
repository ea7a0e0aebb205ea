// A DType value outside the enum (a cast, a C caller) is refused by both
// ops' checks, naming the argument. Found by tests/fuzz/validate_fuzz.cpp:
// it passed the checks whenever every tensor carried the same unknown value.
#include <gtest/gtest.h>

#include "core/validate.hpp"
#include "support/expect_error.hpp"

namespace asynctp::core {
namespace {

alignas(64) unsigned char buffers[3][4096];

TEST(ValidateUnknownDtype, AllGatherRefusesIt) {
  const DType unknown = static_cast<DType>(3);
  const TensorView a = TensorView::row_major(buffers[0], unknown, 4, 8);
  const TensorView b = TensorView::row_major(buffers[1], unknown, 8, 8);
  const TensorView c = TensorView::row_major(buffers[2], unknown, 8, 8);
  asynctp_test::expect_invalid_argument(
      [&] { validate_fused_all_gather_matmul(2, 0, DeviceKind::cpu, a, b, c, nullptr); },
      "a_shard", "dtype must be bf16, fp16 or fp32, got the value 3");
}

TEST(ValidateUnknownDtype, ReduceScatterRefusesIt) {
  const DType unknown = static_cast<DType>(-1);
  const TensorView a = TensorView::row_major(buffers[0], unknown, 8, 8);
  const TensorView b = TensorView::row_major(buffers[1], unknown, 8, 8);
  const TensorView out = TensorView::row_major(buffers[2], unknown, 4, 8);
  asynctp_test::expect_invalid_argument(
      [&] { validate_fused_matmul_reduce_scatter(2, 0, DeviceKind::cpu, a, b, out); }, "a",
      "dtype must be bf16, fp16 or fp32, got the value -1");
}

}  // namespace
}  // namespace asynctp::core
