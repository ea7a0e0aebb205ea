// The HIP backend's device facts (src/hip/device_facts) where no AMD GPU is
// present: gpu::runtime_unavailable_reason (the shared device check) says why, query_device_facts
// refuses with Error(backend) carrying that reason. With an AMD GPU: the facts of device 0 are
// filled and plan through hip_caps.
#include "hip/device_facts.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/runtime_backend.hpp"

namespace asynctp {
namespace {

TEST(HipDeviceFacts, WithoutADeviceTheReasonIsGiven) {
  const std::string why = gpu::runtime_unavailable_reason(0);
  if (why.empty()) GTEST_SKIP() << "an AMD GPU is present";
  EXPECT_NE(std::string::npos, why.find("HIP")) << why;
  try {
    (void)hip::query_device_facts(0);
    ADD_FAILURE() << "device facts without a device";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::backend, e.code()) << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find(why)) << e.what();
  }
  EXPECT_FALSE(gpu::runtime_unavailable_reason(-1).empty());
}

TEST(HipDeviceFacts, OnAnAmdGpuTheFactsAreFilled) {
  if (!gpu::runtime_unavailable_reason(0).empty())
    GTEST_SKIP() << gpu::runtime_unavailable_reason(0);
  const hip::HipDeviceFacts facts = hip::query_device_facts(0);
  EXPECT_FALSE(facts.gcn_arch_name.empty());
  EXPECT_GT(facts.compute_units, 0);
  EXPECT_GE(facts.hardware_queues, 1);
  EXPECT_NE(std::string::npos, gpu::runtime_unavailable_reason(1 << 20).find("no HIP device"));
}

}  // namespace
}  // namespace asynctp
