// A caller's "forever" (a timeout near INT64_MAX ms) is a long wait, not an
// overflow: the deadlines saturate, so the ranks meet as with any timeout
// (it once wrapped into the past and failed at once, and UBSan flagged the
// overflow).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_support.hpp"

namespace asynctp::bootstrap {
namespace {

using namespace test;

TEST(TcpRendezvous, HugeTimeoutIsALongWaitNotAnOverflow) {
  const int port = free_port();
  const std::vector<std::string> records = {"r0", "r1"};
  for (const std::int64_t timeout :
       {std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max() / 2,
        std::int64_t{10'000'000'000'000}}) {
    SCOPED_TRACE("timeout " + std::to_string(timeout) + " ms");
    const auto out = run_all({info_for(0, 2, port), info_for(1, 2, port)}, records, timeout);
    for (const auto& o : out) {
      ASSERT_FALSE(o.failed) << o.message;
      EXPECT_EQ(records, o.records);
    }
  }
}

}  // namespace
}  // namespace asynctp::bootstrap
