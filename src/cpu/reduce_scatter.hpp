// Matmul + reduce-scatter's GEMM side for the three algorithms, as run by
// each member of a rank's worker pool. Every algorithm computes this rank's
// partial product A @ B (rounded to the output dtype) chunk by chunk in send
// order, own chunk last, and marks a chunk computed when its last piece is
// stored (ChunkCountdown), which lets the shipper send it; then the workers
// reduce the own chunk (reduction.hpp). They differ in what a piece is and
// so in how early a chunk is done:
//   native: persistent workers take tiles from a shared cursor in schedule
//     order; a chunk is done as its last tile is stored.
//   pipelined: two lanes take alternate chunks, each chunk one GEMM split
//     among the lane's workers; a chunk is done when its GEMM is.
//   decomposed: one GEMM over all rows; every chunk is done when all of it
//     is, then the reduce-scatter (shipping, reduction) runs.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/algorithms.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/call_context.hpp"

namespace asynctp::cpu {

// How many pieces each chunk's GEMM work has under ctx.plan's algorithm
// with `members` workers (plan.schedule set for native).
std::vector<std::int64_t> reduce_scatter_pieces(const CallContext& ctx, const GemmPlan& plan,
                                                int members);

void run_reduce_scatter_member(CallContext& ctx, GemmPlan& plan, int member, int members,
                               GemmScratch& scratch);

}  // namespace asynctp::cpu
