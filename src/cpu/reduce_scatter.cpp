#include "cpu/reduce_scatter.hpp"

#include <string>
#include <utility>

#include "core/schedule.hpp"
#include "cpu/gemm_span.hpp"
#include "cpu/reduction.hpp"

namespace asynctp::cpu {
namespace {

std::string chunk_span_args(int chunk, std::int64_t row_begin, std::int64_t row_end) {
  return "\"chunk\": " + std::to_string(chunk) + ", " + range_json("rows", row_begin, row_end);
}

void native_member(CallContext& ctx, GemmPlan& plan, int member, GemmScratch& scratch) {
  const std::string lane = lane_name(member);
  for (;;) {
    if (ctx.abort.load(std::memory_order_relaxed)) return;
    const std::int64_t index = plan.next_tile.fetch_add(1, std::memory_order_relaxed);
    if (index >= plan.schedule->size()) return;
    const core::OutputTile tile = plan.schedule->tile(index);
    ctx.before_compute(tile.chunk);
    WorkerSpan span(ctx, member);
    gemm_rows(ctx.a, ctx.b32, ctx.partial, tile.row_begin, tile.row_end, tile.col_begin,
              tile.col_end, scratch);
    span.finish("gemm", [&] {
      return std::pair{"chunk " + std::to_string(tile.chunk),
                       chunk_span_args(tile.chunk, tile.row_begin, tile.row_end) + ", " +
                           range_json("cols", tile.col_begin, tile.col_end)};
    });
    ctx.finish_piece(tile.chunk, lane);
  }
}

void pipelined_member(CallContext& ctx, int member, int members, GemmScratch& scratch) {
  const LaneSeat seat = lane_seat(member, members);
  const std::string lane = lane_name(member);
  const std::vector<int> order = core::send_order(ctx.problem.world_size, ctx.problem.rank);
  const std::int64_t m = ctx.problem.m;
  for (std::size_t position = static_cast<std::size_t>(seat.lane); position < order.size();
       position += static_cast<std::size_t>(seat.lanes)) {
    if (ctx.abort.load(std::memory_order_relaxed)) return;
    const int chunk = order[position];
    const std::int64_t begin = chunk * m + m * seat.index_in_lane / seat.lane_members;
    const std::int64_t end = chunk * m + m * (seat.index_in_lane + 1) / seat.lane_members;
    if (begin < end) {
      ctx.before_compute(chunk);
      WorkerSpan span(ctx, member);
      gemm_rows(ctx.a, ctx.b32, ctx.partial, begin, end, 0, ctx.problem.n, scratch);
      span.finish("gemm", [&] {
        return std::pair{"chunk " + std::to_string(chunk),
                         chunk_span_args(chunk, begin, end) + ", \"lane\": " +
                             std::to_string(seat.lane)};
      });
    }
    ctx.finish_piece(chunk, lane);  // an empty share is a finished piece too
  }
}

void decomposed_member(CallContext& ctx, int member, int members, GemmScratch& scratch) {
  const std::string lane = lane_name(member);
  const std::int64_t m = ctx.problem.m;
  const std::int64_t rows = ctx.problem.gathered_rows();
  const std::int64_t begin = rows * member / members;
  const std::int64_t end = rows * (member + 1) / members;
  if (begin < end) {
    for (int chunk = static_cast<int>(begin / m); chunk * m < end; ++chunk) {
      ctx.before_compute(chunk);
    }
    WorkerSpan span(ctx, member);
    gemm_rows(ctx.a, ctx.b32, ctx.partial, begin, end, 0, ctx.problem.n, scratch);
    span.finish("gemm", [&] {
      return std::pair{std::string("gemm before reduce-scatter"), range_json("rows", begin, end)};
    });
  }
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
  switch (ctx.plan.algorithm) {
    case Algorithm::native:
      native_member(ctx, plan, member, scratch);
      break;
    case Algorithm::pipelined:
      pipelined_member(ctx, member, members, scratch);
      break;
    case Algorithm::decomposed:
      decomposed_member(ctx, member, members, scratch);
      break;
    case Algorithm::automatic:
      return;  // the planner never returns automatic
  }
  reduce_own_chunk(ctx, member, members, scratch);
}

}  // namespace asynctp::cpu
