#include "cpu/algorithms.hpp"

#include <string>

namespace asynctp::cpu {
namespace {

std::string lane_name(int member) { return "gemm worker " + std::to_string(member); }

// Records a span for a block of GEMM work when tracing.
class GemmSpan {
 public:
  GemmSpan(CallContext& ctx, int member, std::string name, std::string args)
      : ctx_(ctx), member_(member), name_(std::move(name)), args_(std::move(args)),
        begin_(ctx.trace ? ctx.trace->now_us() : 0) {}
  ~GemmSpan() {
    if (ctx_.trace) {
      ctx_.trace->add_span(ctx_.problem.rank, lane_name(member_), "gemm", name_, begin_,
                           ctx_.trace->now_us(), args_);
    }
  }

 private:
  CallContext& ctx_;
  int member_;
  std::string name_, args_;
  double begin_;
};

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
    GemmSpan span(ctx, member, "chunk " + std::to_string(tile.chunk),
                  "\"chunk\": " + std::to_string(tile.chunk) + ", \"rows\": [" +
                      std::to_string(tile.row_begin) + ", " + std::to_string(tile.row_end) +
                      "], \"cols\": [" + std::to_string(tile.col_begin) + ", " +
                      std::to_string(tile.col_end) + "]");
    gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, tile.row_begin, tile.row_end, tile.col_begin,
              tile.col_end, scratch);
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
  const auto& order = core::chunk_order(ctx.problem.world_size, ctx.problem.rank);
  const std::int64_t m = ctx.problem.m;
  for (std::size_t position = static_cast<std::size_t>(lane); position < order.size();
       position += static_cast<std::size_t>(lanes)) {
    const int chunk = order[position];
    if (!ctx.acquire_chunk(chunk, lane_label)) return;
    const std::int64_t begin = chunk * m + m * index_in_lane / lane_members;
    const std::int64_t end = chunk * m + m * (index_in_lane + 1) / lane_members;
    if (begin == end) continue;
    GemmSpan span(ctx, member, "chunk " + std::to_string(chunk),
                  "\"chunk\": " + std::to_string(chunk) + ", \"lane\": " + std::to_string(lane));
    gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, begin, end, 0, ctx.problem.n, scratch);
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
  GemmSpan span(ctx, member, "gemm (after all-gather)",
                "\"rows\": [" + std::to_string(begin) + ", " + std::to_string(end) + "]");
  gemm_rows(ctx.gathered, ctx.b32, ctx.c_out, begin, end, 0, ctx.problem.n, scratch);
}

}  // namespace

void run_gemm_member(CallContext& ctx, GemmPlan& plan, int member, int members,
                     GemmScratch& scratch) {
  switch (ctx.plan.algorithm) {
    case Algorithm::native: native_member(ctx, plan, member, scratch); return;
    case Algorithm::pipelined: pipelined_member(ctx, member, members, scratch); return;
    case Algorithm::decomposed: decomposed_member(ctx, member, members, scratch); return;
    case Algorithm::automatic: break;  // the planner never returns automatic
  }
}

}  // namespace asynctp::cpu
