// Trace spans of a rank's GEMM workers, shared by the ops' schedules: one
// thread row per worker ("gemm worker 3"), and a span per block of work
// whose text is only built when a trace is being recorded.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

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

}  // namespace asynctp::cpu
