// Matmul + reduce-scatter's producer, the copy engine's analogue: it ships
// each finished chunk of this rank's partial product (already rounded to the
// output dtype) to the chunk's owner, as soon as the GEMM has released the
// chunk's signal, and releases the owner's flag for it after the bytes.
#pragma once

#include <vector>

#include "cpu/call_context.hpp"

namespace asynctp::cpu {

// The peers' chunks in send order (core::send_order without the own chunk,
// which is not shipped), as the reorder hook permutes them.
std::vector<int> peer_send_order(const core::ProblemDesc& problem);

// Ships the chunks of `order` in that order; each waits (bounded) for its
// signal from this rank's GEMM first.
void run_shipper(CallContext& ctx, const std::vector<int>& order);

}  // namespace asynctp::cpu
