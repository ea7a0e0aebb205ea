// The HIP GEMM paths (src/hip/gemm_paths) where no AMD GPU is present: the
// kernel's arguments built from a call, the library paths refusing with the
// reason when the build has no hipBLAS, and the native kernel's launch
// linked in and failing cleanly without a device.
//
//   HipGemmPaths.NativeArgsFollowTheCall
//       pieces become the kernel's chunks (m / pieces rows, world x pieces
//       chunks, pivot rank x pieces), B's strides follow its layout, the
//       timeout is in device clock ticks, every pointer passes through.
//   HipGemmPaths.LibraryPathsNeedHipblas
//       without hipBLAS, the check pipelined and decomposed make first throws
//       Error(unsupported) naming the path and hipBLAS; with it, it passes.
//   HipGemmPaths.NativeLaunchWithoutADeviceIsAnError
//       launch_async_input_gemm (the hipcc-compiled kernel's host entry) is
//       linked and returns an error status instead of launching.
#include "hip/gemm_paths.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "hip/launch.hpp"

namespace asynctp {
namespace {

gpu::CallSpec spec_for(core::Layout b_layout) {
  gpu::CallSpec call;
  call.problem.world_size = 4;
  call.problem.rank = 2;
  call.problem.m = 1024;
  call.problem.n = 768;
  call.problem.k = 512;
  call.problem.dtype = DType::bf16;
  call.problem.b_layout = b_layout;
  call.pieces = 2;
  call.epoch = 41;
  call.timeout_ms = 250;
  return call;
}

TEST(HipGemmPaths, NativeArgsFollowTheCall) {
  std::vector<std::uint16_t> a(16), b(16), c(16);
  std::uint32_t flags[8] = {};
  std::uint32_t error_words[3] = {};
  for (core::Layout layout : {core::Layout::row_major, core::Layout::col_major}) {
    gpu::CallSpec call = spec_for(layout);
    call.gathered = a.data();
    call.b.data = b.data();
    call.c_out.data = c.data();
    const hip::AsyncInputGemmArgs args = hip::native_args(call, flags, error_words, 100'000);
    EXPECT_EQ(a.data(), args.a);
    EXPECT_EQ(b.data(), args.b);
    EXPECT_EQ(c.data(), args.c);
    EXPECT_EQ(512, args.m_per_chunk);  // 1024 rows in 2 pieces
    EXPECT_EQ(768, args.n);
    EXPECT_EQ(512, args.k);
    EXPECT_EQ(8, args.world_size);  // 4 ranks x 2 pieces
    EXPECT_EQ(4, args.pivot);       // rank 2's first piece
    EXPECT_EQ(flags, args.chunk_flags);
    EXPECT_EQ(41u, args.epoch);
    EXPECT_EQ(25'000'000u, args.timeout_ticks);  // 250 ms at 100 MHz
    EXPECT_EQ(error_words, args.error_words);
    if (layout == core::Layout::row_major) {
      EXPECT_EQ(768, args.b_row_stride);  // B(kk, j) at kk * n + j
      EXPECT_EQ(1, args.b_col_stride);
    } else {
      EXPECT_EQ(1, args.b_row_stride);  // B(kk, j) at kk + j * k
      EXPECT_EQ(512, args.b_col_stride);
    }
  }
}

TEST(HipGemmPaths, LibraryPathsNeedHipblas) {
  const std::string why = hip::library_gemm_unavailable_reason();
  if (why.empty()) {
    EXPECT_NO_THROW(hip::require_library_gemm("pipelined"));
    GTEST_SKIP() << "built with hipBLAS";
  }
  EXPECT_NE(std::string::npos, why.find("hipBLAS")) << why;
  // The check both library paths make before touching the device.
  for (const char* path : {"pipelined", "decomposed"}) {
    try {
      hip::require_library_gemm(path);
      ADD_FAILURE() << path << " would run without hipBLAS";
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::unsupported, e.code()) << e.what();
      const std::string message = e.what();
      EXPECT_NE(std::string::npos, message.find(std::string(path) + " on HIP")) << message;
      EXPECT_NE(std::string::npos, message.find("hipBLAS")) << message;
    }
  }
}

TEST(HipGemmPaths, NativeLaunchWithoutADeviceIsAnError) {
  int count = 0;
  if (hipGetDeviceCount(&count) == hipSuccess && count > 0) GTEST_SKIP() << "an AMD GPU is present";
  (void)hipGetLastError();
  hip::AsyncInputGemmArgs args;
  EXPECT_NE(hipSuccess, hip::launch_async_input_gemm(args, 1, nullptr));
  (void)hipGetLastError();
}

}  // namespace
}  // namespace asynctp
