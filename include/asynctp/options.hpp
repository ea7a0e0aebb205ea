// Per-call options. Anything left unset falls back to the ASYNCTP_* environment
// variable of the same meaning, then to the built-in default (see README).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace asynctp {

class Trace;

enum class Algorithm {
  automatic,   // the planner chooses (ASYNCTP_ALGO=auto)
  native,      // persistent GEMM gated on per-chunk signals
  pipelined,   // per-chunk copies overlapped with per-chunk GEMMs on two lanes
  decomposed,  // all-gather completes, then one GEMM (the baseline)
};

const char* to_string(Algorithm algorithm) noexcept;
// Parses "auto", "native", "pipelined", "decomposed"; throws Error naming
// `what` (e.g. "ASYNCTP_ALGO" or "--algo") otherwise.
Algorithm parse_algorithm(const std::string& text, const std::string& what);

// Where native runs the last chunk (in the schedule's order) of an
// all-gather + matmul. In the kernel, each of that chunk's output tiles is a
// whole K loop on one SM: when the chunk lands last and its tiles are fewer
// than the SMs, most of the GPU idles through them (the tail). As a library
// GEMM (cuBLAS), launched once the chunk has landed, the library spreads
// the same rows over every SM (split-K or stream-K as it sees fit) while
// the kernel runs the other chunks.
enum class NativeTail {
  automatic,  // the planner chooses (ASYNCTP_NATIVE_TAIL=auto)
  kernel,     // every chunk in the native kernel
  library,    // the last chunk as a library GEMM (CUDA, W >= 2)
};

const char* to_string(NativeTail tail) noexcept;
// Parses "auto", "kernel", "library"; throws Error naming `what` otherwise.
NativeTail parse_native_tail(const std::string& text, const std::string& what);

// Hooks that perturb the producer, for tests and demonstrations: they let a
// test delay a chunk, reverse the arrival order, or drop a chunk entirely to
// exercise the bounded wait. They run on the producer (copy) thread, except
// before_compute. For fused_matmul_reduce_scatter they act on the shipping
// of partials (see asynctp/ops.hpp).
struct ArrivalHooks {
  // Given the schedule's chunk order (pivot first), returns the order in which
  // the producer copies. Must be a permutation of `order`.
  std::function<std::vector<int>(int rank, const std::vector<int>& order)> reorder;
  // Called before chunk `chunk` is copied on `rank`; may sleep to delay it.
  std::function<void(int rank, int chunk)> before_copy;
  // Returns true to never copy or signal `chunk` on `rank`. The GPU backends
  // refuse it for the rank's own chunk (which crosses no link) and for
  // algorithms other than native (see asynctp/ops.hpp for the reduce-scatter).
  std::function<bool(int rank, int chunk)> drop;
  // Called on a GEMM worker of `rank` before it computes output rows of
  // `chunk` (a tile, a lane's share of a chunk, or the chunk's rows of the
  // one GEMM); may block to hold the GEMM back, e.g. to show that the
  // shipping of finished chunks does not wait for the rest of the GEMM. CPU
  // backend only; the GPU backends reject it (their GEMM is one kernel).
  std::function<void(int rank, int chunk)> before_compute;
};

// The measured choice's calls of one problem before its choice runs, at
// most: six of each of at most three algorithms where the calls are short
// (two each where they are not).
inline constexpr int kMaxTuningCalls = 18;

struct Options {
  std::optional<Algorithm> algorithm;           // ASYNCTP_ALGO
  std::optional<std::int64_t> wait_timeout_ms;  // ASYNCTP_WAIT_TIMEOUT_MS
  std::optional<std::int64_t> tile_m;           // ASYNCTP_TILE_M (native tile rows)
  std::optional<std::int64_t> tile_n;           // ASYNCTP_TILE_N (native tile columns)
  std::optional<NativeTail> native_tail;        // ASYNCTP_NATIVE_TAIL (all-gather native)
  Trace* trace = nullptr;                       // records spans when set
  // GPU backends: the stream the call is ordered on (a cudaStream_t; nullptr
  // = the legacy default stream). The call enqueues its work there, forks any
  // side streams from it and joins them back, and returns without waiting for
  // the device (see asynctp::synchronize). Ignored by the CPU backend, whose
  // calls are synchronous.
  void* stream = nullptr;
  // ASYNCTP_TUNE (on = true): under auto, the measured choice. A problem's
  // first calls on a communicator run each algorithm the group can run
  // (each an ordinary, correct call) and time it; the group then keeps the
  // fastest for that problem. At most kMaxTuningCalls calls measure.
  std::optional<bool> tune;
  ArrivalHooks hooks;  // testing only
};

// Whether auto's calls made with `options` take the measured choice:
// options.tune where set, else ASYNCTP_TUNE. Throws Error(invalid_argument)
// naming ASYNCTP_TUNE where it is neither "on" nor "off".
bool measured_choice_on(const Options& options);

// What a call did, for logs and the CLI.
struct RunInfo {
  Algorithm algorithm = Algorithm::decomposed;
  std::int64_t tile_m = 0;
  std::int64_t tile_n = 0;
  std::string reason;  // why the planner chose this algorithm
  // The planner's cost model's predicted time of this call's algorithm for
  // this rank (ms); 0 where no model applies (no measured table for the
  // device, or no figure for the link).
  double predicted_ms = 0;
};

}  // namespace asynctp
