// The cost model: each algorithm's predicted time for one rank's call, from
// the device's measured table (core/cost_table.hpp) and the link the
// transport reports. The overlap structure it models (docs/architecture.md):
//   all-gather + matmul, chunk p of W arriving at a_p (own chunk at 0, then
//   one link transfer after another):
//     decomposed  the gather, then one library GEMM of the gathered problem
//     pipelined   per-chunk library GEMMs in arrival order, each starting
//                 when its chunk has arrived and the previous GEMM is done
//     native      one persistent grid: CTA b runs tiles b, b+G, ... in chunk
//                 order, each tile after its chunk has arrived; the last
//                 chunk's tiles, one tile per CTA at a time, are the tail
//   matmul + reduce-scatter, the partial's chunks in send order (own last):
//     decomposed  one GEMM, then W-1 transfers, then the reduction
//     pipelined   per-chunk GEMMs; each finished peer chunk shipped after
//                 the previous one; the reduction after the last arrival
//     native      the persistent grid without waits; a chunk ships when its
//                 last tile is done
// plus each algorithm's fixed cost (per call and per chunk). Pure: no device.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "core/cost_table.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

struct NativeConfig;

// How peers' bytes reach this rank, as the transport reports it.
struct LinkFacts {
  enum class Kind { unknown, pcie, arrival, nccl };
  Kind kind = Kind::unknown;
  double gbps = 0;  // the transport's own figure (the arrival model's); 0: the table's
};

const char* to_string(LinkFacts::Kind kind) noexcept;

// One algorithm's predicted time and what it is made of (ms).
struct Prediction {
  Algorithm algorithm = Algorithm::decomposed;
  double ms = 0;
  double gemm_ms = 0;     // the GEMM work alone (all its kernels, no waits)
  double exposed_ms = 0;  // link time not hidden under the GEMM
  double reduce_ms = 0;   // the reduce-scatter's reduction
  double fixed_ms = 0;    // the algorithm's fixed cost
  std::string kernel;     // native: the config predicted with
  NativeTail tail = NativeTail::kernel;  // native all-gather: where the last chunk runs
};

// "native 1.553 ms (GEMM 1.520, link 0.000, fixed 0.033)".
std::string describe(const Prediction& p);

// The link's bandwidth and latency for the model: the transport's figure
// where it has one, else the table's; nullopt and `why` when neither.
std::optional<LinkCost> resolve_link(const CostTable& table, const LinkFacts& link,
                                     std::string* why);

// One library GEMM (cuBLAS, hipBLAS) of m x n x k from the table's samples
// of that B layout: the throughput interpolated over the nearest samples in
// log-shape space (exact at a sample; clamped at the grid's edge).
double library_gemm_ms(const CostTable& table, Layout b_layout, std::int64_t m, std::int64_t n,
                       std::int64_t k);

// Whether the table can predict `config` at this B layout: it has the
// config's own samples, or the config's efficiency was measured (see
// native_wave_ms). An unmeasured config without samples has no basis.
bool can_predict_native(const CostTable& table, const NativeConfig& config, Layout b_layout);

// The time of one wave of `config`'s tiles (one tile per CTA) at inner
// dimension k: from the config's own samples when the table has some, else
// the library GEMM's throughput per processor over the config's measured
// relative efficiency. Throws Error(invalid_argument) where
// can_predict_native does not hold.
double native_wave_ms(const CostTable& table, const NativeConfig& config, Layout b_layout,
                      std::int64_t m, std::int64_t n, std::int64_t k);

// The predicted time of `algorithm` (native, pipelined or decomposed) for
// `problem`; native needs `config` (its tiles and grid) and, for the
// all-gather, where its last chunk runs (`tail`: kernel or library; the
// library tail's GEMM is taken to start once both the chunk has landed and
// the grid has run the others: concurrency as the grid drains is not
// counted, so it is a bound from above). Throws Error(invalid_argument) for
// Algorithm::automatic, native without config, or an automatic tail.
Prediction predict(const ProblemDesc& problem, Algorithm algorithm, const CostTable& table,
                   const LinkCost& link, const NativeConfig* config,
                   NativeTail tail = NativeTail::kernel);

}  // namespace asynctp::core
