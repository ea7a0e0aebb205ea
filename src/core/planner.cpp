#include "core/planner.hpp"

#include <algorithm>
#include <string>

#include "asynctp/error.hpp"
#include "core/validate.hpp"

namespace asynctp::core {
namespace {

constexpr std::int64_t kNativeDimMultiple = 8;  // 16-byte rows of bf16 for TMA

std::string num(std::int64_t v) { return std::to_string(v); }

// The words the planner's reasons use for each op; its rules are the same.
struct OpWords {
  std::string chunk_rows;    // what a chunk's rows are, with their count
  const char* too_large;     // the tensor the 32-bit limit is about
  const char* overlapped;    // what pipelined's per-chunk GEMMs overlap
  const char* native_extra;  // what native adds to one rank's GEMM
};

OpWords words(const ProblemDesc& problem) {
  if (problem.op == OpKind::matmul_reduce_scatter) {
    return {"rows per chunk (M/W = " + num(problem.m) + ")",
            "the partial product (M x n) or A needs 2^31 or more elements (32-bit indexing)",
            "the shipping of finished partials", "signals and its reduction pass"};
  }
  return {"m per rank (" + num(problem.m) + ")",
          "the gathered problem needs 2^31 or more elements per tensor (32-bit indexing)",
          "the copies", "local copy and signals"};
}

}  // namespace

std::optional<std::string> native_blocker(const ProblemDesc& problem, const BackendCaps& caps,
                                          std::int64_t tile_m, std::int64_t tile_n) {
  if (!caps.native_supported) {
    return "backend " + caps.name + " has no native kernel (" + caps.native_unsupported_reason +
           ")";
  }
  if (problem.dtype != DType::bf16) {
    return std::string("native needs bf16, got ") + to_string(problem.dtype);
  }
  const OpWords w = words(problem);
  if (problem.m % tile_m != 0) {
    return w.chunk_rows + " is not a multiple of the native tile M (" + num(tile_m) +
           "), so a tile would straddle two chunks";
  }
  if (problem.n % kNativeDimMultiple != 0) {
    return "n (" + num(problem.n) + ") is not a multiple of " + num(kNativeDimMultiple);
  }
  if (problem.k % kNativeDimMultiple != 0) {
    return "k (" + num(problem.k) + ") is not a multiple of " + num(kNativeDimMultiple);
  }
  std::int64_t elements = 0;
  if (!checked_element_count(problem.gathered_rows(), std::max(problem.n, problem.k), &elements) ||
      elements > kMaxElementsPerTensor) {
    return w.too_large;
  }
  (void)tile_n;  // N tiles may be partial: the epilogue clips them
  return std::nullopt;
}

Plan plan(const ProblemDesc& problem, const BackendCaps& caps, const ResolvedOptions& options) {
  const std::int64_t tile_m = options.tile_m.value_or(caps.default_tile_m);
  const std::int64_t tile_n = options.tile_n.value_or(caps.default_tile_n);
  const auto blocker = native_blocker(problem, caps, tile_m, tile_n);
  const OpWords w = words(problem);
  const std::string native_fits = "bf16, " + w.chunk_rows + " is a multiple of tile M " +
                                  num(tile_m) +
                                  ", n and k are multiples of 8, within 32-bit limits";

  Plan result;
  const std::string& no_library = caps.library_gemm_unavailable_reason;
  if (!no_library.empty() &&
      (options.algorithm == Algorithm::pipelined || options.algorithm == Algorithm::decomposed)) {
    throw Error(ErrorCode::unsupported, std::string("algorithm ") + to_string(options.algorithm) +
                                            " was forced but cannot run: " + no_library +
                                            "; use native or auto");
  }
  switch (options.algorithm) {
    case Algorithm::native:
      if (blocker) {
        throw Error(ErrorCode::unsupported, "algorithm native was forced but cannot run: " +
                                                *blocker + "; use auto, pipelined or decomposed");
      }
      result = {Algorithm::native, tile_m, tile_n, "forced by options or ASYNCTP_ALGO"};
      return result;
    case Algorithm::pipelined:
      result = {Algorithm::pipelined, 0, 0, "forced by options or ASYNCTP_ALGO"};
      return result;
    case Algorithm::decomposed:
      result = {Algorithm::decomposed, 0, 0, "forced by options or ASYNCTP_ALGO"};
      return result;
    case Algorithm::automatic:
      break;
  }

  if (!no_library.empty()) {
    if (blocker) {
      throw Error(ErrorCode::unsupported,
                  "no algorithm can run this problem here: native unavailable (" + *blocker +
                      ") and pipelined and decomposed unavailable (" + no_library + ")");
    }
    result = {Algorithm::native, tile_m, tile_n,
              "the only path this build has (pipelined and decomposed: " + no_library + "); " +
                  native_fits};
    return result;
  }

  if (!caps.no_overlap_reason.empty()) {
    result = {Algorithm::decomposed, 0, 0,
              "nothing can overlap here (" + caps.no_overlap_reason +
                  "); native and pipelined "
                  "would only add work"};
    return result;
  }
  if (!blocker && problem.world_size == 1) {
    // Native would only add its own work (w.native_extra) to the same GEMM.
    result = {Algorithm::decomposed, 0, 0,
              std::string("one rank has nothing to overlap (native could run, but would only "
                          "add its ") +
                  w.native_extra + " to the same GEMM)"};
    return result;
  }
  if (!caps.overlap_unprofitable_reason.empty()) {
    result = {Algorithm::decomposed, 0, 0,
              "overlap does not pay here (" + caps.overlap_unprofitable_reason + "); one GEMM " +
                  (problem.op == OpKind::matmul_reduce_scatter ? "before the reduce-scatter"
                                                               : "after the gather") +
                  " is faster"};
    return result;
  }
  if (!blocker) {
    result = {Algorithm::native, tile_m, tile_n, native_fits};
    return result;
  }
  if (problem.world_size == 1) {
    result = {Algorithm::decomposed, 0, 0,
              "native unavailable (" + *blocker + "); one rank has nothing to overlap"};
    return result;
  }
  if (problem.m < caps.min_pipelined_chunk_rows) {
    result = {Algorithm::decomposed, 0, 0,
              "native unavailable (" + *blocker + "); chunks of " + num(problem.m) +
                  " rows are below " + num(caps.min_pipelined_chunk_rows) +
                  ", too small for per-chunk GEMMs"};
    return result;
  }
  result = {Algorithm::pipelined, 0, 0,
            "native unavailable (" + *blocker + "); per-chunk GEMMs overlap " + w.overlapped};
  return result;
}

}  // namespace asynctp::core
