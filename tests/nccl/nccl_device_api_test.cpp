// The NCCL this process loaded, against what the transport needs
// (cuda/nccl/nccl_device_api.hpp). Pure, no GPU: the reason an older NCCL
// gives (PyTorch's wheels load theirs first), and that this build's own NCCL
// passes where it is the one loaded.
#include "cuda/nccl/nccl_device_api.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"

namespace {

using asynctp::nccl::device_api_problem;
using asynctp::nccl::kMinNcclVersion;

TEST(NcclDeviceApi, NewEnoughWithEveryEntryPointRuns) {
  EXPECT_EQ(device_api_problem(kMinNcclVersion, true), "");
  EXPECT_EQ(device_api_problem(22809, true), "");
  EXPECT_EQ(device_api_problem(23001, true), "");
}

TEST(NcclDeviceApi, AnOlderNcclIsNamedWithTheVersionItNeeds) {
  // PyTorch 2.4's wheels bundle NCCL 2.20.5.
  const std::string why = device_api_problem(22005, false);
  EXPECT_NE(why.find("2.20.5"), std::string::npos) << why;
  EXPECT_NE(why.find("lacks the device API"), std::string::npos) << why;
  EXPECT_NE(why.find("2.28.0 or newer"), std::string::npos) << why;
  EXPECT_NE(why.find("CPU transport"), std::string::npos) << why;
  // A version that claims enough but lacks a symbol, and the reverse.
  EXPECT_NE(device_api_problem(22809, false), "");
  EXPECT_NE(device_api_problem(22703, true).find("2.27.3"), std::string::npos);
}

// The NCCL this binary was linked with is the one loaded here (no PyTorch):
// new enough (CMake refuses to build the transport otherwise), every entry
// point resolved.
TEST(NcclDeviceApi, ThisBuildsNcclPasses) {
  EXPECT_NO_THROW(asynctp::nccl::require_device_api());
}

}  // namespace
