// The host layer shared with the CUDA backend (src/gpu), built against the
// HIP runtime (ASYNCTP_GPU_HIP). CI has no AMD GPU: there, what can be checked
// is that the same sources compile and link against libamdhip64 and that a
// missing device comes back as asynctp's own error naming the HIP operation
// (not a crash or a hang). On a machine with an AMD GPU the second test runs
// the signal flags through the layer instead.
//
//   HipSharedLayer.WithoutADeviceEveryResourceFailsCleanly
//       gpu::Stream, gpu::Event and gpu::RankResources each throw
//       Error(backend) whose message names HIP and what was being made.
//   HipSharedLayer.FlagMemsetAndReadBackOnAnAmdGpu
//       (AMD GPU only) memset_d32 sets a rank's flags to an epoch in stream
//       order; the host reads exactly those values back.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "gpu/check.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/resources.hpp"
#include "gpu/stream_memops.hpp"
#include "hip_runtime/amd_devices.hpp"

namespace asynctp {
namespace {

template <class Make>
void expect_backend_error_naming(Make make, const std::string& what) {
  try {
    make();
    ADD_FAILURE() << what << " succeeded without an AMD GPU";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::backend, e.code()) << e.what();
    const std::string message = e.what();
    EXPECT_NE(std::string::npos, message.find(std::string("HIP ") + what)) << message;
  }
}

TEST(HipSharedLayer, WithoutADeviceEveryResourceFailsCleanly) {
  if (amd_devices() > 0) GTEST_SKIP() << "an AMD GPU is present";
  EXPECT_STREQ("HIP", gpu::rt::kName);
  expect_backend_error_naming([] { gpu::Stream s("stream create (test)"); },
                              "stream create (test)");
  expect_backend_error_naming([] { gpu::Event e("event create (test)", true); },
                              "event create (test)");
  // The first resource a rank makes is its copy-in stream.
  expect_backend_error_naming([] { gpu::RankResources res(2); }, "stream create (copy in)");
}

TEST(HipSharedLayer, FlagMemsetAndReadBackOnAnAmdGpu) {
  if (amd_devices() == 0) GTEST_SKIP() << "no AMD GPU (hipGetDeviceCount)";
  constexpr int kWorld = 4;
  gpu::RankResources res(kWorld);
  const gpu::rt::StreamHandle s = res.copy_in.get();
  auto* flags = static_cast<std::uint32_t*>(res.flags.get());
  gpu::memset_d32(s, flags + 4, 77u, 4);
  gpu::write_value32(s, flags + 9, 78u);
  std::vector<std::uint32_t> host(kWorld * 4, 1u);
  gpu::check(gpu::rt::memcpy_async(host.data(), flags, host.size() * sizeof(std::uint32_t),
                                   gpu::rt::Copy::device_to_host, s),
             "copy (flags to host)");
  gpu::check(gpu::rt::stream_synchronize(s), "stream synchronize");
  for (std::size_t i = 0; i < host.size(); ++i) {
    const std::uint32_t expected = (i >= 4 && i < 8) ? 77u : (i == 9 ? 78u : 0u);
    EXPECT_EQ(expected, host[i]) << "flag " << i;
  }
}

}  // namespace
}  // namespace asynctp
