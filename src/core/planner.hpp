// The planner: a pure function (problem, facts, options) -> (algorithm,
// native kernel config, reason). Backends and transports report facts as data
// (what they have, what their device is, what their link allows); every
// decision made from those facts is made here, and always says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "core/config.hpp"
#include "core/cost_model.hpp"
#include "core/cost_table.hpp"
#include "core/problem.hpp"
#include "core/tuning.hpp"

namespace asynctp::core {

// One native kernel config a backend can launch, with what it measured of it
// and what it knows of the problem at hand.
struct NativeConfig {
  std::string name;
  std::int64_t m_granularity = 0;  // a chunk's rows must be a multiple (tile M x cluster M)
  std::int64_t tile_m = 0;         // rows of one output tile
  std::int64_t tile_n = 0;
  // Per-tile throughput relative to the backend's best config, measured on
  // its device (the CUDA table: bench/NOTES.md). 0: not measured (a config
  // built but never timed): the rules then offer it only where no measured
  // config can run the shape, and never pick native with it for auto; the
  // cost model predicts it only from its own samples in a calibrated table.
  double efficiency = 1.0;
  std::int64_t max_m = 0;  // auto offers it up to this gathered M only (0: any)
  // For the problem being planned: why the kernel refuses it ("" when it
  // accepts) and the persistent CTAs it would launch.
  std::string refusal;
  int grid = 0;
};

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

  // Facts the planner derives decisions from.
  // The native kernel's configs (empty: any tile, default_tile_m/_n, as on
  // the CPU). With configs, the planner picks one: the tile options' match;
  // else, where a calibrated cost table decides, the config of least time
  // the cost model predicts (the persistent grid over the chunks' arrivals,
  // the last chunk's tail included); else choose_native_config's.
  std::vector<NativeConfig> native_configs;
  // Processors the native grid spreads over (0: no fill rule): below
  // kMinNativeSmFill of them busy with output tiles, auto does not overlap.
  int sm_count = 0;
  // Every stream of the process shares one hardware queue (CUDA's
  // CUDA_DEVICE_MAX_CONNECTIONS=1): copies cannot run beside the GEMM.
  bool single_hardware_queue = false;
  // The transport's: why this rank cannot pull its peers' shards ("" when
  // it can). Then neither native nor pipelined can run.
  std::string no_peer_access;
  // The backend can run native's last chunk as a library GEMM beside the
  // kernel (NativeTail::library): its kernel can leave chunks to the caller.
  bool native_library_tail = false;
  // A condition the native kernel runs under that the reason should state
  // whenever native is planned (e.g. HIP's persistent grid leaving a CU per
  // shader engine out); empty when there is none.
  std::string native_note;

  // The cost model's facts (core/cost_model.hpp): the device's measured
  // table (nullptr: none; no_cost_table then says why) and the transport's
  // link. With both, auto picks the algorithm of least predicted time among
  // those that can run; without, the rules below decide and the reason says
  // so. The thresholds above (min_pipelined_chunk_rows,
  // overlap_unprofitable_reason, kMinNativeSmFill) are those rules.
  const CostTable* cost_table = nullptr;
  std::string no_cost_table;
  LinkFacts link;
};

// Below this share of the SMs busy with output tiles, auto does not overlap.
// W = 8 and 4 loopback runs on the H200 (bench/results/2026-12-04-session6-
// h200.md): at 61 % (80 tiles of 128x256 on 132 SMs) and 48 %, native lost
// to decomposed by up to 22 % and pipelined did no better; at 97 % (128
// tiles of 256x160) and from one full wave up, native won.
inline constexpr double kMinNativeSmFill = 0.75;

// The native kernel a backend runs a problem with.
struct NativeKernel {
  std::string name;
  // Rows of a chunk that one tile covers: signal pieces must hold a whole
  // number of them, so that no tile waits on two pieces.
  std::int64_t m_granularity = 1;
};

// A bit per algorithm, for Plan::runnable.
constexpr unsigned algorithm_bit(Algorithm algorithm) noexcept {
  return 1u << static_cast<unsigned>(algorithm);
}
inline constexpr unsigned kEveryAlgorithmBit = algorithm_bit(Algorithm::native) |
                                               algorithm_bit(Algorithm::pipelined) |
                                               algorithm_bit(Algorithm::decomposed);

struct Plan {
  Algorithm algorithm = Algorithm::decomposed;
  std::int64_t tile_m = 0;  // native only; 0 otherwise (the config's m granularity)
  std::int64_t tile_n = 0;
  std::string reason;
  std::string native_config;  // native only, where the backend has configs
  // The algorithms (algorithm_bit) this rank could run the problem with: under
  // auto, `algorithm` and every less ambitious one whose rules pass here
  // (native > pipelined > decomposed); when forced, the forced one alone.
  // Ranks plan from their own problems (their own K-slice, their own n), so
  // their planners may choose differently; the group then runs one algorithm
  // that every rank can run (core/agreement.hpp, agreed_plan).
  unsigned runnable = 0;
  // The cost model's prediction of every algorithm it ranked (auto), or of
  // the forced one; empty when no model applies (no table, no link figure).
  std::vector<Prediction> predictions = {};
  // Native all-gather only: where the last chunk runs (kernel or library,
  // never automatic once planned).
  NativeTail native_tail = NativeTail::kernel;
  // Set by the agreement where the group's measured choice decided the
  // algorithm (core/tuning.hpp): what the call flow does with the call.
  TuneAction tune = TuneAction::none;
  int tune_runs = 0;  // with `tune`: the group's calls per candidate (TuneVerdict::runs)
};

// An overlapping algorithm is chosen over a less ambitious one only when it
// is predicted faster by more than this share: within it the two are a tie,
// and the tie goes to the one with fewer moving parts.
inline constexpr double kPredictionTie = 0.01;

// The prediction of `algorithm` in `plan`, or nullptr.
const Prediction* prediction_of(const Plan& plan, Algorithm algorithm);

// Whether `config`'s per-tile efficiency was measured (NativeConfig::efficiency).
inline bool measured(const NativeConfig& config) { return config.efficiency > 0; }

// The rules' config for `problem`, where no calibrated cost table decides:
// of those that accept it, the one of the best score (wave efficiency over
// `processors` x measured per-tile efficiency), the unmeasured ones only
// where no measured one accepts it (by wave efficiency alone); nullptr when
// none accepts it.
const NativeConfig* choose_native_config(const ProblemDesc& problem,
                                         const std::vector<NativeConfig>& configs, int processors);

// Why native cannot run this problem, or nullopt when it can.
std::optional<std::string> native_blocker(const ProblemDesc& problem, const BackendCaps& caps,
                                          std::int64_t tile_m, std::int64_t tile_n);

// Throws Error(unsupported) when a forced algorithm cannot run the problem.
Plan plan(const ProblemDesc& problem, const BackendCaps& caps, const ResolvedOptions& options);

}  // namespace asynctp::core
