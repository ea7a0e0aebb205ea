// The small kernels of the reduce-scatter op on GPUs, written once over the
// runtime layer (gpu/runtime.hpp) for the loopback and NCCL transports:
// the owner's reduction of the W partials of its chunk, a bounded wait for
// the partials its peers ship, and the arrival link's model.
// One source (partial_kernels.cu) for CUDA (nvcc) and HIP (hipcc, with the
// names HIP spells differently in hip/partial_kernel_names.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "asynctp/tensor.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// out (rows x cols, row-major, ld = cols) = round(fp32 sum of own, then
// slots[0], slots[1], ... slots[slot_count - 1]) in that order, every input
// rows x cols row-major in `dtype`: the CPU backend's summation order, so
// the two backends round alike. Writes nothing when *error_words != 0 (a
// wait of this call timed out: its output is reported, not produced).
//
// The sum may be taken in passes, each over a range of the slots, with the
// unrounded fp32 sum handed from one pass to the next (sum_out, then sum_in):
// every element is then added in the same order and rounded once, so the
// result is bitwise that of one pass. A pass starts from own (first_slot 0)
// or from sum_in (first_slot > 0), adds slots [first_slot, slot_count), and
// writes the rounded sum to out or, when sum_out is set, the fp32 sum there.
struct ReduceArgs {
  DType dtype = DType::bf16;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  const void* own = nullptr;
  const void* slots = nullptr;  // slot_count blocks of rows x cols, back to back
  int slot_count = 0;
  void* out = nullptr;
  const std::uint32_t* error_words = nullptr;  // may be null: never skip
  int first_slot = 0;
  const float* sum_in = nullptr;  // first_slot > 0: the earlier passes' sum
  float* sum_out = nullptr;       // not the last pass: this pass's sum
  // Where set, the passes follow the verdict of the wait before the first
  // (enqueue_wait_flags' rest_landed): when every slot had landed by then,
  // the first pass adds all `every_slot` slots and rounds into out (one
  // pass: no fp32 sum written and read back) and a later pass does nothing.
  const std::uint32_t* all_landed = nullptr;
  int every_slot = 0;
};
rt::Status enqueue_reduce_partials(const ReduceArgs& args, rt::StreamHandle stream);

// The pass over slots [first, end) of the sum `all` describes (its
// slot_count is every slot), with the fp32 sum between passes in `sum`.
inline ReduceArgs reduction_pass(const ReduceArgs& all, int first, int end, float* sum) {
  ReduceArgs pass = all;
  pass.first_slot = first;
  pass.slot_count = end;
  pass.sum_in = first > 0 ? sum : nullptr;
  pass.sum_out = end < all.slot_count ? sum : nullptr;
  pass.every_slot = all.slot_count;
  return pass;
}

// One block: waits for flags[i] == epoch, i = first .. count - 1 in order
// (each at most timeout_ns), with system-scope acquire loads. On a timeout
// it writes error_words [0] = 1 + i, [1] = the flag seen, [2] = epoch (first
// failure wins) and returns, as it does at once when another wait of the call
// (the arrival model's) has failed already. One block keeps the SMs free for the peers'
// GEMMs that the partials come from. With rest_landed, once the wait is
// over it also records whether flags [count, rest_end) hold the epoch
// already (1) or not (0): ReduceArgs::all_landed.
rt::Status enqueue_wait_flags(const std::uint32_t* flags, int first, int count,
                              std::uint32_t epoch, std::uint64_t timeout_ns,
                              std::uint32_t* error_words, rt::StreamHandle stream,
                              std::uint32_t* rest_landed = nullptr, int rest_end = 0);

// The arrival link's model for one call's W - 1 shipments into this rank:
// slot i is released (slot_flags[i] = epoch, a system-scope release store)
// transfer_ns after both the partial it stands for is computed here
// (computed[owners[i]] == epoch: by the ring's symmetry the peer computes
// its partial of step i when this rank computes its own) and the link has
// carried slot i - 1. One thread does every step, launched once per call:
// no step waits for a launch, or for a free SM while the call's GEMM or
// reduction fills the GPU, which a real link's copy engines never do. A
// partial not computed within timeout_ns leaves error words as
// enqueue_wait_flags does (slot i) and releases every remaining slot at once,
// so nothing behind the model waits forever and the reduction writes nothing.
struct LinkModelArgs {
  static constexpr int kMaxSteps = 63;  // the loopback group's 64 ranks
  const std::uint32_t* computed = nullptr;  // per chunk of this rank's partial
  int owners[kMaxSteps] = {};               // the chunk slot i stands for
  int steps = 0;
  std::uint32_t* slot_flags = nullptr;
  std::uint32_t epoch = 0;
  std::uint64_t transfer_ns = 0;
  std::uint64_t timeout_ns = 0;
  std::uint32_t* error_words = nullptr;
};
rt::Status enqueue_link_model(const LinkModelArgs& args, rt::StreamHandle stream);

// One thread that spins for `ns` of device time: device work of a known
// length in stream order (the tests hold a stream with it).
rt::Status enqueue_link_delay(std::uint64_t ns, rt::StreamHandle stream);

}  // namespace asynctp::gpu
