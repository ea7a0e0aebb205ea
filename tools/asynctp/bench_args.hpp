// The arguments of `asynctp bench`, the single-GPU overlap benchmark: which
// link models to run, the problem, and how long to measure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.hpp"

namespace asynctp::tool {

struct BenchArgs {
  std::vector<LinkChoice> links = {LinkChoice::pcie, LinkChoice::arrival};  // --link both
  double link_gbps = kDefaultLinkGbps;
  bool link_gbps_given = false;
  int world_size = 8;
  std::int64_t m_global = 8192;  // rows of the gathered A (all ranks together)
  std::int64_t n = 8192;
  std::int64_t k = 8192;
  bool b_col_major = false;
  int iters = 20;
  int warmup = 3;
  bool check = false;
  bool json = false;
  int device = 0;
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::optional<std::int64_t> timeout_ms;
  bool help = false;

  std::int64_t m_per_rank() const noexcept { return m_global / world_size; }
  // The `run` arguments of one link's measurements (bf16, cuda backend).
  RunArgs run_args(LinkChoice link) const;
};

// Parses the arguments that follow `bench`. Throws UsageError naming the flag
// and its rule.
BenchArgs parse_bench_args(const std::vector<std::string>& args);

}  // namespace asynctp::tool
