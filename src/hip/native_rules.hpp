// When the AMD native kernel may run: gfx942 or gfx950
// (read from the device's gcnArchName, which carries feature suffixes such as
// "gfx942:sramecc+:xnack-"), every tensor below 2^31 elements (32-bit
// indexing), m per rank a multiple of the 256-row tile. Pure, so the planner
// rule is tested on the CPU; the HIP runtime layer feeds it the device's name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace asynctp::hip {

// The architecture part of a gcnArchName ("gfx942:sramecc+:xnack-" -> "gfx942").
std::string gfx_target(const std::string& gcn_arch_name);

// Why the native kernel cannot run this problem on this device, or nullopt.
std::optional<std::string> native_blocker(const std::string& gcn_arch_name, int world_size,
                                          std::int64_t m_per_rank, std::int64_t n, std::int64_t k);

}  // namespace asynctp::hip
