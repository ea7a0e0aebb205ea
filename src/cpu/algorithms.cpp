#include "cpu/algorithms.hpp"

#include <string>
#include <utility>
#include <vector>

#include "cpu/gemm_span.hpp"

namespace asynctp::cpu {
namespace {

// Persistent workers take output tiles in schedule order from a shared
// cursor, as the persistent CTAs do, and gate each tile on its chunk.
void native_member(CallContext& ctx, GemmPlan& plan, int member, GemmScratch& scratch) {
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
    ctx.before_compute(tile.chunk);
    WorkerSpan span(ctx, member);
    gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, tile.row_begin, tile.row_end, tile.col_begin,
              tile.col_end, scratch);
    span.finish("gemm", [&] {
      return std::pair{"chunk " + std::to_string(tile.chunk),
                       "\"chunk\": " + std::to_string(tile.chunk) + ", " +
                           range_json("rows", tile.row_begin, tile.row_end) + ", " +
                           range_json("cols", tile.col_begin, tile.col_end)};
    });
  }
}

// Two lanes (the two compute streams) take alternate chunks in arrival
// order; each chunk is one GEMM call, split among the lane's workers.
void pipelined_member(CallContext& ctx, int member, int members, GemmScratch& scratch) {
  const LaneSeat seat = lane_seat(member, members);
  const auto lane_label = lane_name(member);
  const std::vector<int> order = core::chunk_order(ctx.problem.world_size, ctx.problem.rank);
  const std::int64_t m = ctx.problem.m;
  for (std::size_t position = static_cast<std::size_t>(seat.lane); position < order.size();
       position += static_cast<std::size_t>(seat.lanes)) {
    const int chunk = order[position];
    if (!ctx.acquire_chunk(chunk, lane_label)) return;
    const std::int64_t begin = chunk * m + m * seat.index_in_lane / seat.lane_members;
    const std::int64_t end = chunk * m + m * (seat.index_in_lane + 1) / seat.lane_members;
    if (begin == end) continue;
    ctx.before_compute(chunk);
    WorkerSpan span(ctx, member);
    gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, begin, end, 0, ctx.problem.n, scratch);
    span.finish("gemm", [&] {
      return std::pair{"chunk " + std::to_string(chunk), "\"chunk\": " + std::to_string(chunk) +
                                                             ", \"lane\": " + std::to_string(seat.lane) +
                                                             ", " + range_json("rows", begin, end)};
    });
  }
}

// The all-gather completes first; then one GEMM over all rows, split among
// the workers as a multithreaded library GEMM would split it.
void decomposed_member(CallContext& ctx, int member, int members, GemmScratch& scratch) {
  const auto lane = lane_name(member);
  for (int chunk = 0; chunk < ctx.problem.world_size; ++chunk) {
    if (!ctx.acquire_chunk(chunk, lane)) return;
  }
  const std::int64_t rows = ctx.problem.gathered_rows();
  const std::int64_t begin = rows * member / members;
  const std::int64_t end = rows * (member + 1) / members;
  if (begin == end) return;
  for (int chunk = static_cast<int>(begin / ctx.problem.m);
       chunk * ctx.problem.m < end; ++chunk) {
    ctx.before_compute(chunk);
  }
  WorkerSpan span(ctx, member);
  gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, begin, end, 0, ctx.problem.n, scratch);
  span.finish("gemm", [&] {
    return std::pair{std::string("gemm after all-gather"), range_json("rows", begin, end)};
  });
}

}  // namespace

void run_gemm_member(CallContext& ctx, GemmPlan& plan, int member, int members,
                     GemmScratch& scratch) {
  switch (ctx.plan.algorithm) {
    case Algorithm::native:
      native_member(ctx, plan, member, scratch);
      return;
    case Algorithm::pipelined:
      pipelined_member(ctx, member, members, scratch);
      return;
    case Algorithm::decomposed:
      decomposed_member(ctx, member, members, scratch);
      return;
    case Algorithm::automatic:
      break;  // the planner never returns automatic
  }
}

}  // namespace asynctp::cpu
