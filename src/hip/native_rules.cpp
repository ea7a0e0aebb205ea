#include "hip/native_rules.hpp"

#include <algorithm>

#include "core/validate.hpp"
#include "hip/mfma_layout.hpp"

namespace asynctp::hip {

std::string gfx_target(const std::string& gcn_arch_name) {
  return gcn_arch_name.substr(0, gcn_arch_name.find(':'));
}

std::optional<std::string> native_blocker(const std::string& gcn_arch_name, int world_size,
                                          std::int64_t m_per_rank, std::int64_t n, std::int64_t k) {
  const std::string target = gfx_target(gcn_arch_name);
  if (target != "gfx942" && target != "gfx950") {
    return "the AMD native kernel runs on gfx942 and gfx950 only; this device is " +
           (target.empty() ? std::string("unnamed") : target);
  }
  if (m_per_rank % layout::BlockTile::m != 0) {
    return "m per rank (" + std::to_string(m_per_rank) + ") is not a multiple of the tile M (" +
           std::to_string(layout::BlockTile::m) + "), so a tile would straddle two chunks";
  }
  std::int64_t elements = 0;
  const std::int64_t rows = m_per_rank * world_size;
  if (!core::checked_element_count(rows, std::max(n, k), &elements) ||
      elements > core::kMaxElementsPerTensor || !core::checked_element_count(k, n, &elements) ||
      elements > core::kMaxElementsPerTensor) {
    return "a tensor of this problem has 2^31 or more elements (the kernel indexes in 32 bits)";
  }
  return std::nullopt;
}

}  // namespace asynctp::hip
