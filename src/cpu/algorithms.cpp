#include "cpu/algorithms.hpp"

#include <string>
#include <utility>
#include <vector>

#include "cpu/worker_common.hpp"

namespace asynctp::cpu {
namespace {

// Persistent workers take output tiles in schedule order from a shared
// cursor, as the persistent CTAs do, and gate each tile on its chunk.
void native_member(CallContext& ctx, GemmPlan& plan, int member, int, GemmScratch& scratch) {
  const auto lane = lane_name(member);
  int ready_chunk = -1;
  for (;;) {
    const std::int64_t index = plan.next_tile.fetch_add(1, std::memory_order_relaxed);
    if (index >= plan.schedule->size()) return;
    const core::OutputTile tile = plan.schedule->tile(index);
    if (tile.chunk != ready_chunk) {
      if (!ctx.acquire_chunk(tile.chunk, lane)) return;
      ready_chunk = tile.chunk;
    }
    compute_block(ctx, member, tile, ctx.gathered, ctx.c_out, scratch);
  }
}

// Two lanes (the two compute streams) take alternate chunks in arrival
// order; each chunk is one GEMM call, split among the lane's workers.
void pipelined_member(CallContext& ctx, GemmPlan&, int member, int members, GemmScratch& scratch) {
  const LaneSeat seat = lane_seat(member, members);
  const auto lane_label = lane_name(member);
  const std::vector<int> order = core::chunk_order(ctx.problem.world_size, ctx.problem.rank);
  for (std::size_t position = static_cast<std::size_t>(seat.lane); position < order.size();
       position += static_cast<std::size_t>(seat.lanes)) {
    const int chunk = order[position];
    if (!ctx.acquire_chunk(chunk, lane_label)) return;
    const core::OutputTile share = lane_share(seat, chunk, ctx.problem.m, ctx.problem.n);
    if (share.row_begin == share.row_end) continue;
    compute_block(ctx, member, share, ctx.gathered, ctx.c_out, scratch, seat.lane);
  }
}

// The all-gather completes first; then one GEMM over all rows, split among
// the workers as a multithreaded library GEMM would split it.
void decomposed_member(CallContext& ctx, GemmPlan&, int member, int members, GemmScratch& scratch) {
  const auto lane = lane_name(member);
  for (int chunk = 0; chunk < ctx.problem.world_size; ++chunk) {
    if (!ctx.acquire_chunk(chunk, lane)) return;
  }
  compute_share_of_all_rows(ctx, member, members, ctx.gathered, ctx.c_out, scratch,
                            "gemm after all-gather");
}

}  // namespace

void run_gemm_member(CallContext& ctx, GemmPlan& plan, int member, int members,
                     GemmScratch& scratch) {
  run_member({native_member, pipelined_member, decomposed_member}, ctx, plan, member, members,
             scratch);
}

}  // namespace asynctp::cpu
