// The agreement step across processes: a rank's call record (core/agreement)
// as a fixed-size block of bytes that an NCCL all-gather or a shared-memory
// slot (cpu/process_group) can carry, and back.
// Pure, so the encoding is tested without a GPU.
#pragma once

#include <array>
#include <cstddef>

#include "core/agreement.hpp"

namespace asynctp::core {

inline constexpr std::size_t kWireRecordBytes = 512;
using WireRecord = std::array<unsigned char, kWireRecordBytes>;

// Carries ok, world size, the problem (op, m, n, k, dtype, B layout,
// gathered output), the plan (algorithm, tiles), whether the workspace must
// grow and up to 255 bytes of the error
// (longer messages are cut, ending in "...").
WireRecord encode(const CallRecord& record);
// Throws Error(backend) on a block that is not a record of this version.
CallRecord decode(const WireRecord& wire);

}  // namespace asynctp::core
