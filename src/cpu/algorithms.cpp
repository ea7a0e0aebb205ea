#include "cpu/algorithms.hpp"

#include <string>
#include <utility>
#include <vector>

namespace asynctp::cpu {
namespace {

std::string lane_name(int member) { return "gemm worker " + std::to_string(member); }

// Records a span for a block of GEMM work when tracing; the span's text is
// only built when a trace is being recorded.
class GemmSpan {
 public:
  GemmSpan(CallContext& ctx, int member) : ctx_(ctx), member_(member) {
    if (ctx_.trace) begin_ = ctx_.trace->now_us();
  }
  template <typename Describe>
  void finish(Describe describe) {
    if (!ctx_.trace) return;
    auto [name, args] = describe();
    ctx_.trace->add_span(ctx_.problem.rank, lane_name(member_), "gemm", name, begin_,
                         ctx_.trace->now_us(), args);
  }

 private:
  CallContext& ctx_;
  int member_;
  double begin_ = 0;
};

std::string range_json(const char* key, std::int64_t begin, std::int64_t end) {
  return std::string("\"") + key + "\": [" + std::to_string(begin) + ", " + std::to_string(end) +
         "]";
}

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
    GemmSpan span(ctx, member);
    gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, tile.row_begin, tile.row_end, tile.col_begin,
              tile.col_end, scratch);
    span.finish([&] {
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
  const int lanes = members >= 2 ? 2 : 1;
  const int lane = member % lanes;
  const int lane_members = (members - lane + lanes - 1) / lanes;
  const int index_in_lane = member / lanes;
  const auto lane_label = lane_name(member);
  const std::vector<int> order = core::chunk_order(ctx.problem.world_size, ctx.problem.rank);
  const std::int64_t m = ctx.problem.m;
  for (std::size_t position = static_cast<std::size_t>(lane); position < order.size();
       position += static_cast<std::size_t>(lanes)) {
    const int chunk = order[position];
    if (!ctx.acquire_chunk(chunk, lane_label)) return;
    const std::int64_t begin = chunk * m + m * index_in_lane / lane_members;
    const std::int64_t end = chunk * m + m * (index_in_lane + 1) / lane_members;
    if (begin == end) continue;
    GemmSpan span(ctx, member);
    gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, begin, end, 0, ctx.problem.n, scratch);
    span.finish([&] {
      return std::pair{"chunk " + std::to_string(chunk), "\"chunk\": " + std::to_string(chunk) +
                                                             ", \"lane\": " + std::to_string(lane) +
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
  GemmSpan span(ctx, member);
  gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, begin, end, 0, ctx.problem.n, scratch);
  span.finish([&] {
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
