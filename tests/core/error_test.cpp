// The one exception type: what() carries "asynctp <code>: <detail>" for logs,
// detail() the bare message for callers that add their own prefix, and every
// code and enum has a printable name.
#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"
#include "support/printers.hpp"

namespace asynctp {
namespace {

TEST(Error, WhatCarriesCodeAndDetail) {
  const Error e(ErrorCode::mismatch, "ranks disagree on dtype");
  EXPECT_EQ(e.code(), ErrorCode::mismatch);
  EXPECT_EQ(e.detail(), "ranks disagree on dtype");
  EXPECT_STREQ(e.what(), "asynctp rank mismatch: ranks disagree on dtype");
  const std::runtime_error& base = e;  // catchable as a standard exception
  EXPECT_STREQ(base.what(), e.what());
}

TEST(Error, NamesOfCodesAndEnums) {
  EXPECT_STREQ(to_string(ErrorCode::invalid_argument), "invalid argument");
  EXPECT_STREQ(to_string(ErrorCode::unsupported), "unsupported");
  EXPECT_STREQ(to_string(ErrorCode::timeout), "timeout");
  EXPECT_STREQ(to_string(ErrorCode::mismatch), "rank mismatch");
  EXPECT_STREQ(to_string(ErrorCode::backend), "backend error");
  EXPECT_STREQ(to_string(DType::bf16), "bf16");
  EXPECT_STREQ(to_string(DType::fp16), "fp16");
  EXPECT_STREQ(to_string(DType::fp32), "fp32");
  EXPECT_EQ(element_size(DType::bf16), 2u);
  EXPECT_EQ(element_size(DType::fp16), 2u);
  EXPECT_EQ(element_size(DType::fp32), 4u);
  EXPECT_STREQ(to_string(DeviceKind::cpu), "cpu");
  EXPECT_STREQ(to_string(DeviceKind::cuda), "cuda");
  EXPECT_STREQ(to_string(DeviceKind::hip), "hip");
}

TEST(TensorView, LayoutPredicates) {
  int dummy[4] = {};
  const TensorView r = TensorView::row_major(dummy, DType::fp32, 3, 5);
  EXPECT_TRUE(r.is_row_major());
  EXPECT_FALSE(r.is_col_major());
  EXPECT_EQ(r.numel(), 15);
  const TensorView c = TensorView::col_major(dummy, DType::fp32, 3, 5);
  EXPECT_TRUE(c.is_col_major());
  EXPECT_FALSE(c.is_row_major());
  EXPECT_EQ(c.row_stride, 1);
  EXPECT_EQ(c.col_stride, 3);
  EXPECT_EQ(r.device.kind, DeviceKind::cpu);
}

}  // namespace
}  // namespace asynctp
