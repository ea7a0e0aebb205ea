// One rank's receive side of matmul + reduce-scatter: W - 1 slots where its
// peers' producers write their partials of this rank's chunk (m x n, in the
// output dtype), each with a flag released after its bytes. Slot i holds
// what arrives at ring step i (core::partial_slot). In-process the slots are
// plain memory every rank of the group writes directly, as NCCL symmetric
// windows are for GPUs.
#pragma once

#include "asynctp/tensor.hpp"
#include "core/problem.hpp"
#include "core/signals.hpp"
#include "cpu/workspace.hpp"

namespace asynctp::cpu {

class Inbox {
 public:
  explicit Inbox(int world_size) : flags_(world_size > 1 ? world_size - 1 : 0) {}

  // Grows the slots to hold `problem`'s partial chunks. The owner calls it
  // before publishing its call record: peers write only after the agreement
  // and have finished the previous call's writes (its completion barrier).
  // Throws Error(backend) when the memory cannot be had.
  void reserve(const core::ProblemDesc& problem);

  // Slot `slot` for an agreed call's problem (its m, n and dtype).
  TensorView slot(int slot, const core::ProblemDesc& problem) const noexcept;
  core::ChunkSignals& flags() noexcept { return flags_; }

 private:
  core::ChunkSignals flags_;
  Workspace slots_;
  void* data_ = nullptr;
};

}  // namespace asynctp::cpu
