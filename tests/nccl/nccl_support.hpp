// Support for the NCCL transport tests (tests/nccl): skip rules, a local
// group with one problem per rank on the rank's own GPU, and the checks.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/nccl.hpp"
#include "gpu/loopback_support.hpp"

namespace asynctp_test::nccl {

namespace lb = asynctp_test::loopback;

inline int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

// "" when `world` local GPUs can run NCCL ranks (and, for native, are sm_90).
inline std::string skip_reason(int world, bool needs_sm90) {
  std::string why = asynctp::nccl::unavailable_reason(world);
  if (!why.empty()) return why;
  if (needs_sm90) {
    for (int d = 0; d < world; ++d) {
      int major = 0, minor = 0;
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d);
      if (major != 9 || minor != 0) return "GPU " + std::to_string(d) + " is not sm_90";
    }
  }
  return "";
}

#define ASYNCTP_REQUIRE_GPUS(world, needs_sm90)                                             \
  do {                                                                                      \
    const std::string asynctp_skip_ = ::asynctp_test::nccl::skip_reason(world, needs_sm90); \
    if (!asynctp_skip_.empty()) GTEST_SKIP() << asynctp_skip_;                              \
  } while (0)

inline std::vector<int> first_devices(int world) {
  std::vector<int> devices;
  for (int d = 0; d < world; ++d) devices.push_back(d);
  return devices;
}

// One call of `algorithm` on every rank of `group` for `shape`, fresh inputs,
// poisoned outputs, then the float64 checks on every rank.
inline void expect_correct_call(asynctp::nccl::LocalGroup& group, const Shape& shape,
                                asynctp::Algorithm algorithm, std::mt19937_64& rng,
                                const std::string& what) {
  SCOPED_TRACE(what + " " + shape.to_string() + " " + asynctp::to_string(algorithm));
  const int world = group.world_size();
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(world, first_devices(world)));
  lb::LoopbackProblem problem(shape, rng);
  problem.set_devices(first_devices(world));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const asynctp::Options options = lb::options_for(algorithm);
  const auto results = lb::run_ranks(
      group, streams,
      [&](asynctp::Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); }, what);
  lb::expect_all_ok(results, algorithm == asynctp::Algorithm::automatic
                                 ? std::nullopt
                                 : std::optional<asynctp::Algorithm>(algorithm));
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

}  // namespace asynctp_test::nccl
