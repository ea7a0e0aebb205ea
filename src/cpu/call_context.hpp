// Everything one rank's call shares between its producer and its GEMM
// workers. Built by the communicator after the ranks agreed on the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"
#include "asynctp/trace.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "core/signals.hpp"
#include "cpu/inbox.hpp"

namespace asynctp::cpu {

// The CPU analogue of the native kernel's per-chunk tile counters: a chunk's
// GEMM work is cut into pieces (tiles, a lane member's share, a worker's
// rows); the worker that stores a chunk's last piece releases its signal.
// The acq_rel decrements form a release sequence, so that release follows
// every piece's stores.
class ChunkCountdown {
 public:
  void reset(const std::vector<std::int64_t>& pieces_per_chunk);
  // True for the caller that finished the chunk's last piece.
  bool finish_piece(int chunk) noexcept {
    return remaining_[static_cast<std::size_t>(chunk)].fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

 private:
  std::unique_ptr<std::atomic<std::int64_t>[]> remaining_;
  std::size_t size_ = 0;
};

struct CallContext {
  core::ProblemDesc problem;
  core::Plan plan;
  std::uint32_t epoch = 0;
  std::int64_t timeout_ms = 0;
  const float* b32 = nullptr;  // B widened to fp32, row-major k x n

  // This rank's chunk flags. All-gather: chunk c of the gathered A arrived
  // (producer -> GEMM). Reduce-scatter: chunk c of the partial product is
  // computed (GEMM -> producer, and -> the reduction for the own chunk).
  core::ChunkSignals* signals = nullptr;
  Trace* trace = nullptr;
  const ArrivalHooks* hooks = nullptr;

  // All-gather + matmul.
  std::vector<TensorView> shards;  // every rank's A shard (the symmetric workspace)
  TensorView gathered;             // where chunks land: (W*m) x k, row-major
  TensorView c_out;

  // Matmul + reduce-scatter.
  TensorView a;                    // this rank's A: (W*m) x k, its K-slice
  TensorView partial;              // this rank's partial A @ B: (W*m) x n, output dtype
  TensorView out;                  // its rows of the sum: m x n
  std::vector<InboxView> inboxes;  // every rank's receive slots, by rank
  ChunkCountdown countdown;

  // Set by the first failing thread so the others stop waiting.
  std::atomic<bool> abort{false};

  // Waits for flags[index] to hold this call's epoch. Returns false if
  // another thread of this call failed (abort); when the wait runs out, sets
  // abort and throws Error(timeout) with timeout_message(the flag's value).
  // Records a wait span `span_name` (args `span_args`) when it had to wait.
  bool acquire(const core::ChunkSignals& flags, int index, const std::string& lane,
               const std::string& span_name, const std::string& span_args,
               const std::function<std::string(std::uint32_t flag)>& timeout_message);

  // All-gather: waits for chunk's signal; the timeout names the chunk and
  // its source rank.
  bool acquire_chunk(int chunk, const std::string& lane);

  // Reduce-scatter: a piece of chunk's GEMM work is stored; the last piece
  // releases the chunk's signal.
  void finish_piece(int chunk, const std::string& lane);

  // Runs the before_compute hook, if any.
  void before_compute(int chunk) const;
};

}  // namespace asynctp::cpu
