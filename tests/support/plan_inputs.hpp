// The planner's inputs as the core tests build them: a problem, options that
// force an algorithm, a native config's facts. Shared by the planner's rule
// tests and the cost model's tests.
#pragma once

#include <cstdint>

#include "core/planner.hpp"

namespace asynctp::core::test_inputs {

inline ProblemDesc problem(OpKind op, int world, std::int64_t m, std::int64_t n, std::int64_t k,
                           DType dtype = DType::bf16) {
  ProblemDesc p;
  p.op = op;
  p.world_size = world;
  p.rank = 0;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = dtype;
  return p;
}

inline ProblemDesc problem(int world, std::int64_t m, std::int64_t n, std::int64_t k,
                           DType dtype = DType::bf16) {
  return problem(OpKind::all_gather_matmul, world, m, n, k, dtype);
}

inline ResolvedOptions forced(Algorithm a) {
  ResolvedOptions o;
  o.algorithm = a;
  o.algorithm_forced = a != Algorithm::automatic;
  return o;
}

inline NativeConfig native_config(const char* name, std::int64_t granularity, std::int64_t tile_m,
                                  std::int64_t tile_n, double efficiency, int grid) {
  NativeConfig c;
  c.name = name;
  c.m_granularity = granularity;
  c.tile_m = tile_m;
  c.tile_n = tile_n;
  c.efficiency = efficiency;
  c.grid = grid;
  return c;
}

}  // namespace asynctp::core::test_inputs
