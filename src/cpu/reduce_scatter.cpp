#include "cpu/reduce_scatter.hpp"

#include <string>
#include <utility>

#include "core/schedule.hpp"
#include "cpu/reduction.hpp"
#include "cpu/worker_common.hpp"

namespace asynctp::cpu {
namespace {

void native_member(CallContext& ctx, GemmPlan& plan, int member, int, GemmScratch& scratch) {
  const std::string lane = lane_name(member);
  for (;;) {
    if (ctx.abort.load(std::memory_order_relaxed)) return;
    const std::int64_t index = plan.next_tile.fetch_add(1, std::memory_order_relaxed);
    if (index >= plan.schedule->size()) return;
    const core::OutputTile tile = plan.schedule->tile(index);
    compute_block(ctx, member, tile, ctx.a, ctx.partial, scratch);
    ctx.finish_piece(tile.chunk, lane);
  }
}

void pipelined_member(CallContext& ctx, GemmPlan&, int member, int members, GemmScratch& scratch) {
  const LaneSeat seat = lane_seat(member, members);
  const std::string lane = lane_name(member);
  const std::vector<int> order = core::send_order(ctx.problem.world_size, ctx.problem.rank);
  for (std::size_t position = static_cast<std::size_t>(seat.lane); position < order.size();
       position += static_cast<std::size_t>(seat.lanes)) {
    if (ctx.abort.load(std::memory_order_relaxed)) return;
    const int chunk = order[position];
    const core::OutputTile share = lane_share(seat, chunk, ctx.problem.m, ctx.problem.n);
    if (share.row_begin < share.row_end) {
      compute_block(ctx, member, share, ctx.a, ctx.partial, scratch, seat.lane);
    }
    ctx.finish_piece(chunk, lane);  // an empty share is a finished piece too
  }
}

void decomposed_member(CallContext& ctx, GemmPlan&, int member, int members, GemmScratch& scratch) {
  const std::string lane = lane_name(member);
  compute_share_of_all_rows(ctx, member, members, ctx.a, ctx.partial, scratch,
                            "gemm before reduce-scatter");
  // Every chunk waits for every worker: the reduce-scatter follows the GEMM.
  for (int chunk = 0; chunk < ctx.problem.world_size; ++chunk) ctx.finish_piece(chunk, lane);
}

}  // namespace

std::vector<std::int64_t> reduce_scatter_pieces(const CallContext& ctx, const GemmPlan& plan,
                                                int members) {
  const int world = ctx.problem.world_size;
  std::vector<std::int64_t> pieces(static_cast<std::size_t>(world), members);
  switch (ctx.plan.algorithm) {
    case Algorithm::native:
      pieces.assign(pieces.size(), plan.schedule->tiles_per_chunk());
      break;
    case Algorithm::pipelined: {
      const std::vector<int> order = core::send_order(world, ctx.problem.rank);
      const int lanes = lane_seat(0, members).lanes;
      for (std::size_t position = 0; position < order.size(); ++position) {
        const int lane = static_cast<int>(position) % lanes;
        pieces[static_cast<std::size_t>(order[position])] = members_of_lane(lane, lanes, members);
      }
      break;
    }
    case Algorithm::decomposed:
    case Algorithm::automatic:
      break;
  }
  return pieces;
}

void run_reduce_scatter_member(CallContext& ctx, GemmPlan& plan, int member, int members,
                               GemmScratch& scratch) {
  run_member({native_member, pipelined_member, decomposed_member}, ctx, plan, member, members,
             scratch);
  reduce_own_chunk(ctx, member, members, scratch);
}

}  // namespace asynctp::cpu
