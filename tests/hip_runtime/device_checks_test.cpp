// The GPU call's residency check (gpu/call_check) built against HIP: a tensor
// that says it lives on another device, or whose pointer is host memory, is
// refused with Error(invalid_argument) naming the argument, in HIP's terms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "gpu/call_check.hpp"

namespace asynctp {
namespace {

void expect_refused(const TensorView& t, int device, const std::string& says) {
  try {
    gpu::check_on_device("a_shard", t, device);
    ADD_FAILURE() << "accepted a tensor that is not in this rank's device memory";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code()) << e.what();
    const std::string message = e.what();
    EXPECT_NE(std::string::npos, message.find("a_shard: ")) << message;
    EXPECT_NE(std::string::npos, message.find(says)) << message;
  }
}

TEST(HipDeviceChecks, HostMemoryAndOtherDevicesAreRefused) {
  std::vector<std::uint16_t> host(64);
  TensorView on_one =
      TensorView::row_major(host.data(), DType::bf16, 8, 8, Device{DeviceKind::cuda, 1});
  expect_refused(on_one, 0, "must live on HIP device 0");
  TensorView on_zero = on_one;
  on_zero.device.index = 0;
  // A host vector: HIP calls it unregistered host memory (or, without a
  // driver, a pointer it does not know); either way not device memory.
  try {
    gpu::check_on_device("a_shard", on_zero, 0);
    ADD_FAILURE() << "accepted host memory";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code()) << e.what();
    const std::string message = e.what();
    EXPECT_TRUE(message.find("must point to device memory") != std::string::npos ||
                message.find("is not a pointer HIP knows") != std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace asynctp
