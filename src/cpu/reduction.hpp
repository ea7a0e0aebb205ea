// The owner's side of matmul + reduce-scatter: once this rank's own chunk is
// computed, its GEMM workers sum the W partials of that chunk in fp32 and
// round once into `out`. The sum runs in a fixed order, the own partial then
// receive slots 0, 1, ..., W-2 (the order in which they are due), so results
// do not depend on arrival timing; each slot is acquired (bounded) just
// before it is added, so early partials are added while later ones are still
// in flight.
#pragma once

#include "cpu/block_gemm.hpp"
#include "cpu/call_context.hpp"

namespace asynctp::cpu {

// Member `member` of `members` reduces its share of the own chunk's rows.
// Stops early if another thread of the call failed; throws Error(timeout)
// naming the chunk and the peer whose partial never came.
void reduce_own_chunk(CallContext& ctx, int member, int members, GemmScratch& scratch);

}  // namespace asynctp::cpu
