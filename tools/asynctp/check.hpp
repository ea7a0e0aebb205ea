// --check: every rank's C against the float64 product of all shards with that
// rank's B, and every rank's gathered A bit for bit against the shards.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"
#include "rank_data.hpp"

namespace asynctp::tool {

// One float64 C per rank, computed once and reused by every algorithm:
// at full size each is a long float64 GEMM.
using References = std::vector<std::vector<double>>;

// Only for the ranks `wanted` accepts (default: all); the others get an empty
// reference, and check_outputs skips them (ranks held by other processes).
References compute_references(const std::vector<RankData>& ranks,
                              const std::function<bool(int)>& wanted = {});

// Fills every rank's outputs with a NaN pattern, so unwritten elements show.
void poison_outputs(std::vector<RankData>& ranks);

struct CheckResult {
  bool ok = true;
  double max_rel_error = 0;  // over ranks; infinite when some output is not finite
  double tolerance = 0;
  std::vector<std::string> failures;  // one line per failing rank
};

CheckResult check_outputs(const std::vector<RankData>& ranks, const References& references);

}  // namespace asynctp::tool
