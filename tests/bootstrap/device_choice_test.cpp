// choose_rank_device: LOCAL_RANK among the visible GPUs, device 0 when the
// launcher left each process one GPU, and a clear refusal otherwise.
#include "bootstrap/device_choice.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "asynctp/error.hpp"

namespace asynctp::bootstrap {
namespace {

// The Error choose_rank_device throws, as (code, message).
std::pair<ErrorCode, std::string> error_for(int visible, int local_rank, int world) {
  try {
    const DeviceChoice c = choose_rank_device(visible, local_rank, world);
    ADD_FAILURE() << "accepted: device " << c.device;
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::unsupported, ""};
}

TEST(DeviceChoice, LocalRankAmongTheVisibleGpus) {
  for (int visible : {1, 2, 8}) {
    for (int local = 0; local < visible; ++local) {
      const DeviceChoice c = choose_rank_device(visible, local, 8);
      EXPECT_EQ(local, c.device);
      EXPECT_TRUE(c.note.empty()) << c.note;
    }
  }
}

TEST(DeviceChoice, OneVisibleGpuIsTheRanksWhateverItsLocalRank) {
  for (int local : {1, 3, 7, 1000}) {
    const DeviceChoice c = choose_rank_device(1, local, 8);
    EXPECT_EQ(0, c.device);
    EXPECT_NE(std::string::npos,
              c.note.find("LOCAL_RANK " + std::to_string(local) + " but this process sees one GPU"))
        << c.note;
    EXPECT_NE(std::string::npos, c.note.find("using it, device 0")) << c.note;
  }
}

TEST(DeviceChoice, SeveralVisibleAndLocalRankPastThemIsRefused) {
  const auto [code, message] = error_for(2, 3, 8);
  EXPECT_EQ(ErrorCode::invalid_argument, code);
  EXPECT_NE(std::string::npos,
            message.find("LOCAL_RANK: 3 names GPU 3, but this process sees 2 GPUs"))
      << message;
  EXPECT_NE(std::string::npos, message.find("a job of 8 ranks")) << message;
  EXPECT_EQ(ErrorCode::invalid_argument, error_for(8, 8, 16).first);
}

TEST(DeviceChoice, NoGpuOrANegativeLocalRankIsRefused) {
  EXPECT_EQ(ErrorCode::backend, error_for(0, 0, 1).first);
  const auto [code, message] = error_for(4, -1, 4);
  EXPECT_EQ(ErrorCode::invalid_argument, code);
  EXPECT_NE(std::string::npos, message.find("LOCAL_RANK: must be at least 0")) << message;
}

}  // namespace
}  // namespace asynctp::bootstrap
