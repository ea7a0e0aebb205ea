// The AMD native kernel as the HIP rank backend launches it
// (src/hip/native_launch) where no AMD GPU is present: the kernel's arguments
// built from a call, its launch linked in and failing cleanly without a
// device, its error words as text.
//
//   HipNativeLaunch.NativeArgsFollowTheCall
//       pieces become the kernel's chunks (m / pieces rows, world x pieces
//       chunks, pivot rank x pieces), B's strides follow its layout, the
//       timeout is in device clock ticks, every pointer passes through.
//   HipNativeLaunch.LaunchWithoutADeviceIsAnError
//       launch_async_input_gemm (the hipcc-compiled kernel's host entry) is
//       linked and returns an error status instead of launching.
//   HipNativeLaunch.ErrorWordsNameTheChunkAndTheEpoch
//       no timeout -> ""; a timeout names the chunk, the flag seen, the epoch
//       expected and the bound in ms.
#include "hip/native_launch.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "hip/launch.hpp"
#include "hip_runtime/amd_devices.hpp"

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

TEST(HipNativeLaunch, NativeArgsFollowTheCall) {
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

TEST(HipNativeLaunch, LaunchWithoutADeviceIsAnError) {
  if (amd_devices() > 0) GTEST_SKIP() << "an AMD GPU is present";
  hip::AsyncInputGemmArgs args;
  EXPECT_NE(hipSuccess, hip::launch_async_input_gemm(args, 1, nullptr));
  (void)hipGetLastError();
}

TEST(HipNativeLaunch, ErrorWordsNameTheChunkAndTheEpoch) {
  const std::uint32_t none[3] = {0, 0, 0};
  EXPECT_EQ("", hip::native_error_message(none, 1'000'000));
  const std::uint32_t timed_out[3] = {3, 6, 7};  // chunk 2 read epoch 6, waited for 7
  const std::string message = hip::native_error_message(timed_out, 250'000'000);
  EXPECT_NE(std::string::npos, message.find("chunk 2 (the A shard of rank 2) never arrived"))
      << message;
  EXPECT_NE(std::string::npos, message.find("250.000 ms")) << message;
  EXPECT_NE(std::string::npos, message.find("flag read 6, expected epoch 7")) << message;
}

}  // namespace
}  // namespace asynctp
