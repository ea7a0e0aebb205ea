// All-gather + matmul's GEMM side of the three algorithms, as run by each
// member of a rank's worker pool. All read the gathered A only after
// acquiring the chunk's signal, so the same code is correct under any
// arrival order or delay. GemmPlan is any op's per-call worker state.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/schedule.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/call_context.hpp"

namespace asynctp::cpu {

struct GemmPlan {
  const core::TileSchedule* schedule = nullptr;  // native only: the tile order
  std::atomic<std::int64_t> next_tile{0};        // native: the persistent scheduler's cursor
};

void run_gemm_member(CallContext& ctx, GemmPlan& plan, int member, int members,
                     GemmScratch& scratch);

}  // namespace asynctp::cpu
