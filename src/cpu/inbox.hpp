// One rank's receive side of matmul + reduce-scatter: W - 1 slots where its
// peers' producers write their partials of this rank's chunk (m x n, in the
// output dtype), each with a flag released after its bytes. Slot i holds
// what arrives at ring step i (core::partial_slot). The slots are plain
// memory every rank of the group writes directly, as NCCL symmetric windows
// are for GPUs: in-process an Inbox owns them; across processes they live in
// shared memory (cpu/process_group.hpp). The schedules see either through an
// InboxView.
#pragma once

#include "asynctp/tensor.hpp"
#include "core/problem.hpp"
#include "core/signals.hpp"
#include "cpu/workspace.hpp"

namespace asynctp::cpu {

// Where a rank's receive slots and their flags are, for one agreed call.
struct InboxView {
  core::ChunkSignals* flags = nullptr;  // one per slot
  void* slots = nullptr;                // W - 1 slots of m x n, back to back

  // Slot `slot` for an agreed call's problem (its m, n and dtype).
  TensorView slot(int slot, const core::ProblemDesc& problem) const noexcept;
};

// The bytes of the W - 1 receive slots `problem` needs.
std::size_t inbox_bytes(const core::ProblemDesc& problem) noexcept;

// The receive side of a rank of an in-process group: flags and slots of its own.
class Inbox {
 public:
  explicit Inbox(int world_size) : flags_(world_size > 1 ? world_size - 1 : 0) {}

  // Grows the slots to hold `problem`'s partial chunks. The owner calls it
  // before publishing its call record: peers write only after the agreement
  // and have finished the previous call's writes (its completion barrier).
  // Throws Error(backend) when the memory cannot be had.
  void reserve(const core::ProblemDesc& problem);

  InboxView view() noexcept { return {&flags_, data_}; }

 private:
  core::ChunkSignals flags_;
  Workspace slots_;
  void* data_ = nullptr;
};

}  // namespace asynctp::cpu
