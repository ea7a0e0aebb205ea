// What the ops' GEMM-worker schedules share: trace spans (one thread row per
// worker, "gemm worker 3", and a span per block of work whose text is only
// built when a trace is being recorded), pipelined's lane seats, and the
// dispatch to the plan's algorithm.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/schedule.hpp"
#include "cpu/algorithms.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/call_context.hpp"

namespace asynctp::cpu {

inline std::string lane_name(int member) { return "gemm worker " + std::to_string(member); }

inline std::string range_json(const char* key, std::int64_t begin, std::int64_t end) {
  return std::string("\"") + key + "\": [" + std::to_string(begin) + ", " + std::to_string(end) +
         "]";
}

class WorkerSpan {
 public:
  WorkerSpan(CallContext& ctx, int member) : ctx_(ctx), member_(member) {
    if (ctx_.trace) begin_ = ctx_.trace->now_us();
  }
  // describe() returns {name, args_json}; called only when tracing.
  template <typename Describe>
  void finish(const char* category, Describe describe) {
    if (!ctx_.trace) return;
    auto [name, args] = describe();
    ctx_.trace->add_span(ctx_.problem.rank, lane_name(member_), category, name, begin_,
                         ctx_.trace->now_us(), args);
  }

 private:
  CallContext& ctx_;
  int member_;
  double begin_ = 0;
};

// A worker's seat in pipelined's two lanes (the two compute streams): lanes
// take alternate chunks in schedule order, and a chunk is split among its
// lane's members.
struct LaneSeat {
  int lanes = 1;
  int lane = 0;
  int lane_members = 1;
  int index_in_lane = 0;
};

// One block of a chunk's GEMM on a worker: dst[rows, cols] = a[rows, :] @ B
// (B = ctx.b32), after the before_compute hook, with its trace span (`lane`:
// pipelined's lane, or -1).
inline void compute_block(CallContext& ctx, int member, const core::OutputTile& block,
                          const TensorView& a, const TensorView& dst, GemmScratch& scratch,
                          int lane = -1) {
  ctx.before_compute(block.chunk);
  WorkerSpan span(ctx, member);
  gemm_rows(a, ctx.b32, dst, block.row_begin, block.row_end, block.col_begin, block.col_end,
            scratch);
  span.finish("gemm", [&] {
    return std::pair{"chunk " + std::to_string(block.chunk),
                     "\"chunk\": " + std::to_string(block.chunk) + ", " +
                         range_json("rows", block.row_begin, block.row_end) + ", " +
                         range_json("cols", block.col_begin, block.col_end) +
                         (lane >= 0 ? ", \"lane\": " + std::to_string(lane) : "")};
  });
}

// Worker `member`'s share of the decomposed algorithm's one GEMM over all
// W*m rows, as a multithreaded library GEMM would split it: the
// before_compute hook of every chunk its rows touch, then one block and one
// trace span named `name`.
inline void compute_share_of_all_rows(CallContext& ctx, int member, int members,
                                      const TensorView& a, const TensorView& dst,
                                      GemmScratch& scratch, const char* name) {
  const std::int64_t m = ctx.problem.m;
  const std::int64_t rows = ctx.problem.gathered_rows();
  const std::int64_t begin = rows * member / members;
  const std::int64_t end = rows * (member + 1) / members;
  if (begin == end) return;
  for (int chunk = static_cast<int>(begin / m); chunk * m < end; ++chunk) {
    ctx.before_compute(chunk);
  }
  WorkerSpan span(ctx, member);
  gemm_rows(a, ctx.b32, dst, begin, end, 0, ctx.problem.n, scratch);
  span.finish("gemm", [&] { return std::pair{std::string(name), range_json("rows", begin, end)}; });
}

inline int members_of_lane(int lane, int lanes, int members) {
  return (members - lane + lanes - 1) / lanes;
}

inline LaneSeat lane_seat(int member, int members) {
  LaneSeat seat;
  seat.lanes = members >= 2 ? 2 : 1;
  seat.lane = member % seat.lanes;
  seat.lane_members = members_of_lane(seat.lane, seat.lanes, members);
  seat.index_in_lane = member / seat.lanes;
  return seat;
}

// This seat's share of chunk `chunk` (m rows, n columns): full-width rows,
// possibly none when the lane has more members than the chunk has rows.
inline core::OutputTile lane_share(const LaneSeat& seat, int chunk, std::int64_t m,
                                   std::int64_t n) {
  core::OutputTile share;
  share.chunk = chunk;
  share.row_begin = chunk * m + m * seat.index_in_lane / seat.lane_members;
  share.row_end = chunk * m + m * (seat.index_in_lane + 1) / seat.lane_members;
  share.col_end = n;
  return share;
}

// An op's GEMM-worker schedule per algorithm, each run by every member of
// the pool with the same arguments.
using MemberFn = void (*)(CallContext& ctx, GemmPlan& plan, int member, int members,
                          GemmScratch& scratch);
struct AlgorithmMembers {
  MemberFn native;
  MemberFn pipelined;
  MemberFn decomposed;
};

// Runs the plan's algorithm's schedule (the planner never returns automatic).
inline void run_member(const AlgorithmMembers& schedules, CallContext& ctx, GemmPlan& plan,
                       int member, int members, GemmScratch& scratch) {
  MemberFn run = nullptr;
  switch (ctx.plan.algorithm) {
    case Algorithm::native:
      run = schedules.native;
      break;
    case Algorithm::pipelined:
      run = schedules.pipelined;
      break;
    case Algorithm::decomposed:
      run = schedules.decomposed;
      break;
    case Algorithm::automatic:
      return;
  }
  run(ctx, plan, member, members, scratch);
}

}  // namespace asynctp::cpu
