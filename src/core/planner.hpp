// The planner: a pure function (problem, backend capabilities, options) ->
// (algorithm, tile config, reason). It picks native only where the backend
// supports it and the problem fits its tile granularity, and always says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "asynctp/options.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

struct BackendCaps {
  std::string name;  // e.g. "cpu", "cuda sm_90a"
  bool native_supported = false;
  std::string native_unsupported_reason;  // set when !native_supported
  std::int64_t default_tile_m = 256;      // rows of one native output tile
  std::int64_t default_tile_n = 256;
  // Below this many rows per chunk, per-chunk GEMMs are too small to pay for
  // their launch, so pipelined is not chosen automatically.
  std::int64_t min_pipelined_chunk_rows = 128;
  // Set when nothing can overlap on this backend as configured (e.g. one
  // CUDA hardware queue for every stream): auto then picks decomposed, the
  // cheapest way to do the same work in sequence. Forced algorithms still run.
  std::string no_overlap_reason;
  // Set when overlap cannot pay for itself on this problem, though it could
  // run (e.g. the native kernel would leave a quarter of the GPU idle where
  // one library GEMM after the gather fills it): auto then picks decomposed.
  // Forced algorithms still run.
  std::string overlap_unprofitable_reason;
  // Set when this build has no library GEMM (e.g. a HIP build without
  // hipBLAS): pipelined and decomposed cannot run; auto then needs native,
  // and forcing either of the others is an error that says why.
  std::string library_gemm_unavailable_reason;
  // A condition the native kernel runs under that the reason should state
  // whenever native is planned (e.g. HIP's persistent grid leaving a CU per
  // shader engine out); empty when there is none.
  std::string native_note;
};

struct Plan {
  Algorithm algorithm = Algorithm::decomposed;
  std::int64_t tile_m = 0;  // native only; 0 otherwise
  std::int64_t tile_n = 0;
  std::string reason;
};

// Why native cannot run this problem, or nullopt when it can.
std::optional<std::string> native_blocker(const ProblemDesc& problem, const BackendCaps& caps,
                                          std::int64_t tile_m, std::int64_t tile_n);

// Throws Error(unsupported) when a forced algorithm cannot run the problem.
Plan plan(const ProblemDesc& problem, const BackendCaps& caps, const ResolvedOptions& options);

}  // namespace asynctp::core
