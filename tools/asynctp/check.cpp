#include "check.hpp"

#include <algorithm>
#include <cstdio>

#include "core/reference.hpp"
#include "parallel.hpp"

namespace asynctp::tool {
namespace {

std::vector<TensorView> all_shards(const std::vector<RankData>& ranks) {
  std::vector<TensorView> shards;
  for (const RankData& r : ranks) shards.push_back(r.a_shard);
  return shards;
}

std::string format_error(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", value);
  return buf;
}

}  // namespace

References compute_references(const std::vector<RankData>& ranks,
                              const std::function<bool(int)>& wanted) {
  const std::vector<TensorView> shards = all_shards(ranks);
  References refs(ranks.size());
  parallel_for(static_cast<int>(ranks.size()), [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    if (wanted && !wanted(r)) return;
    refs[i] = core::reference_all_gather_matmul(shards, ranks[i].b);
  });
  return refs;
}

void poison_outputs(std::vector<RankData>& ranks) {
  parallel_for(static_cast<int>(ranks.size()), [&](int r) {
    const RankData& data = ranks[static_cast<std::size_t>(r)];
    core::poison(data.c);
    core::poison(data.gathered);
  });
}

CheckResult check_outputs(const std::vector<RankData>& ranks, const References& references) {
  const int world = static_cast<int>(ranks.size());
  const DType dtype = ranks.front().c.dtype;
  const std::int64_t m = ranks.front().a_shard.rows;
  std::vector<core::Comparison> comparisons(ranks.size());
  std::vector<int> bad_chunk(ranks.size(), -1);
  // Ranks without a reference are held by another process: not checked here.
  const auto checked = [&](int r) { return !references[static_cast<std::size_t>(r)].empty(); };
  parallel_for(world, [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    if (!checked(r)) return;
    comparisons[i] = core::compare_to_reference(ranks[i].c, references[i]);
    for (int s = 0; s < world; ++s) {
      if (!core::bitwise_equal_rows(ranks[i].gathered, s * m,
                                    ranks[static_cast<std::size_t>(s)].a_shard)) {
        bad_chunk[i] = s;
        break;
      }
    }
  });

  CheckResult result;
  result.tolerance = core::error_tolerance(dtype);
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (!checked(r)) continue;
    const core::Comparison& c = comparisons[i];
    result.max_rel_error = std::max(result.max_rel_error, c.relative_frobenius_error);
    std::string why;
    if (c.unwritten > 0) why += ", " + std::to_string(c.unwritten) + " C elements never written";
    if (c.non_finite > c.unwritten) {
      why += ", " + std::to_string(c.non_finite - c.unwritten) + " C elements not finite";
    }
    if (c.non_finite == 0 && c.relative_frobenius_error > result.tolerance) {
      why += ", C rel. error " + format_error(c.relative_frobenius_error) + " > " +
             format_error(result.tolerance);
    }
    if (bad_chunk[i] >= 0) {
      why += ", gathered A rows of rank " + std::to_string(bad_chunk[i]) +
             "'s shard differ from the shard";
    }
    if (!why.empty()) {
      result.ok = false;
      result.failures.push_back("rank " + std::to_string(r) + ": " + why.substr(2));
    }
  }
  return result;
}

}  // namespace asynctp::tool
