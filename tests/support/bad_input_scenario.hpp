// The frame of a bad-input test on the CPU backend's in-process ranks: every
// rank's buffers (inputs random, outputs a sentinel pattern), its options,
// and a call each rank makes from them; after a rejected call every buffer
// of every rank must be byte-for-byte what it was. An op's test supplies
// its Buffers (allocate(rng) keeping each tensor in `guard`) and its call.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/host_tensor.hpp"

namespace asynctp_test {

// Tensors whose bytes a rejected call must leave as they were.
class GuardedTensors {
 public:
  void keep(const HostTensor& t) { kept_.emplace_back(&t, t.snapshot()); }
  void clear() { kept_.clear(); }
  bool untouched() const {
    for (const auto& [tensor, bytes] : kept_) {
      if (!tensor->equals(bytes)) return false;
    }
    return true;
  }

 private:
  std::vector<std::pair<const HostTensor*, std::vector<unsigned char>>> kept_;
};

template <typename Buffers>
struct BadInputScenario {
  explicit BadInputScenario(int world) : ranks(world), options(world) {
    for (asynctp::Options& o : options) o.wait_timeout_ms = 5'000;
  }

  // Allocates every rank's buffers afresh, then every rank makes
  // call(comm, its buffers, its options).
  template <typename Call>
  std::vector<Outcome> run(asynctp::cpu::Group& group, std::mt19937_64& rng, Call call) {
    for (Buffers& r : ranks) r.allocate(rng);
    return run_collective(group, [&](asynctp::Comm& comm) {
      const auto r = static_cast<std::size_t>(comm.rank());
      return call(comm, ranks[r], options[r]);
    });
  }

  void expect_everything_untouched() const {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      EXPECT_TRUE(ranks[r].guard.untouched())
          << "rank " << r << "'s buffers changed although the call was rejected";
    }
  }

  std::vector<Buffers> ranks;
  std::vector<asynctp::Options> options;
};

}  // namespace asynctp_test
