// Everything one rank's call shares between its producer and its GEMM
// workers. Built by the communicator after the ranks agreed on the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"
#include "asynctp/trace.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "core/signals.hpp"

namespace asynctp::cpu {

struct CallContext {
  core::ProblemDesc problem;
  core::Plan plan;
  std::uint32_t epoch = 0;
  std::int64_t timeout_ms = 0;

  std::vector<TensorView> shards;  // every rank's A shard (the symmetric workspace)
  TensorView gathered;             // where chunks land: (W*m) x k, row-major
  const float* b32 = nullptr;      // B widened to fp32, row-major k x n
  TensorView c_out;

  core::ChunkSignals* signals = nullptr;
  Trace* trace = nullptr;
  const ArrivalHooks* hooks = nullptr;

  // Set by the first failing thread so the others stop waiting.
  std::atomic<bool> abort{false};

  // Waits for chunk's signal. Returns false if another thread of this call
  // failed (abort); throws Error(timeout) naming the chunk and its source rank
  // when the wait runs out, after setting abort. Records a wait span when it
  // had to wait.
  bool acquire_chunk(int chunk, const std::string& lane);
};

}  // namespace asynctp::cpu
