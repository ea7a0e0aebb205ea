// The agreement step across processes: a rank's call record (core/agreement)
// as a fixed-size block of bytes that an NCCL all-gather or a shared-memory
// slot (cpu/process_group) can carry, and back.
// Pure, so the encoding is tested without a GPU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/agreement.hpp"

namespace asynctp::core {

inline constexpr std::size_t kWireRecordBytes = 512;
using WireRecord = std::array<unsigned char, kWireRecordBytes>;

// The most ranks a record may name (a group of more is refused).
inline constexpr std::int64_t kMaxWireWorldSize = std::int64_t{1} << 20;

// Carries ok, world size, the problem (op, m, n, k, dtype, B layout,
// gathered output), the plan (algorithm, tiles, the algorithms the rank
// could run), whether the workspace must grow, the measured-choice
// proposal (its step, algorithm and up to three times, to the nanosecond)
// and up to 311 bytes of text:
// the error of a failed record, the planner's reason of a good one (longer
// texts are cut, ending in "...").
WireRecord encode(const CallRecord& record);
// Throws Error(backend) naming the field on a block that is not a record of
// this version, or whose fields are outside what any record holds (each
// dimension within 32-bit tensors, enums within their values, flags 0 or 1,
// rank below world size, the text ended and zero-padded).
CallRecord decode(const WireRecord& wire);

}  // namespace asynctp::core
