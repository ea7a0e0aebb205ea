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
// wait of this call timed out: its output is reported, not produced). Where
// every input's 16-byte groups start aligned (rows * cols a multiple of 16
// bytes' worth of elements, 16-byte aligned pointers) each thread moves 16
// bytes of every input at a time, else one element: bitwise the same sums.
struct ReduceArgs {
  DType dtype = DType::bf16;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  const void* own = nullptr;
  const void* slots = nullptr;  // slot_count blocks of rows x cols, back to back
  int slot_count = 0;
  void* out = nullptr;
  std::uint32_t* error_words = nullptr;  // may be null (not with SlotFlags): never skip
  // Where set, the verdict of the wait before the kernels (enqueue_wait_flags'
  // rest_landed: 1 where every slot had landed by then): the one pass runs
  // only where it is 1, the reduction as the slots land only where it is 0,
  // so that the two, enqueued one after the other, do the work once: the one
  // pass streams HBM faster where nothing is left to wait for.
  const std::uint32_t* all_landed = nullptr;
};
rt::Status enqueue_reduce_partials(const ReduceArgs& args, rt::StreamHandle stream);

// Where the slots' flags are: slot i has landed once flags[i] == epoch.
struct SlotFlags {
  const std::uint32_t* flags = nullptr;
  std::uint32_t epoch = 0;
  std::uint64_t timeout_ns = 0;  // per slot
};

// The same sum, taken as the slots land: one kernel, a grid the device
// holds at once, whose blocks add the slots in order, each run of landed
// slots as soon as its first one has: thread 0 waits for the next slot's
// flag (the bounded wait of every kernel here; on a timeout the error words
// name the slot, as enqueue_wait_flags writes them) and takes every later
// slot that has landed too; the block adds them to its elements' fp32 sum
// (kept in `sum`, rows x cols fp32, between runs) and rounds into out after
// the last. Each element is summed in the same order and rounded once
// whatever the runs, so the result is bitwise that of one pass; after the
// last arrival only the last run is left (where the link is slower than the
// reduction, one slot: 10 of the one pass's 18 bytes per element at W = 8,
// bf16). out is written only by a block that has every slot, so a call
// whose wait timed out leaves it as it was (unless the slot lands just as a
// wait gives up: the blocks that saw it then write their part, correctly,
// in a call that reports the timeout). `sum` may be null where
// slot_count < 2. Its blocks hold their SMs while they wait: only for slots
// that nothing needing an SM has yet to release (copies; a link model
// already running).
rt::Status enqueue_reduce_as_slots_land(const ReduceArgs& args, const SlotFlags& land, float* sum,
                                        rt::StreamHandle stream);

// One block: waits for land.flags[i] == land.epoch, i = first .. count - 1
// in order (each at most land.timeout_ns), with system-scope acquire loads.
// On a timeout it writes error_words [0] = 1 + i, [1] = the flag seen, [2] =
// epoch (first failure wins) and returns, as it does at once when another
// wait of the call (the arrival model's) has failed already. One block keeps
// the SMs free for the work that sets the flags. With rest_landed, once the
// wait is over it also records whether flags [count, rest_end) hold the
// epoch already (1) or not (0): ReduceArgs::all_landed.
rt::Status enqueue_wait_flags(const SlotFlags& land, int first, int count,
                              std::uint32_t* error_words, rt::StreamHandle stream,
                              std::uint32_t* rest_landed = nullptr, int rest_end = 0);

// The arrival link's model for one call's W - 1 shipments into this rank,
// each in `pieces` pieces: piece j of slot i has landed transfer_ns after
// both the piece it stands for is computed here (computed[owners[i] *
// pieces + j] == epoch: by the ring's symmetry the peer computes its
// partial of step i when this rank computes its own) and the link has
// carried the piece before (a piece computed while the link was busy starts
// exactly when it is free); slot i is released (slot_flags[i] = epoch, a
// system-scope release store) once its last piece has landed. One thread
// does every step, launched once per call: no step waits for a launch, or
// for a free SM while the call's GEMM or reduction fills the GPU, which a
// real link's copy engines never do. A piece not computed within
// timeout_ns leaves error words as enqueue_wait_flags does (slot i) and
// releases every remaining slot at once, so nothing behind the model waits
// forever and the reduction writes nothing.
struct LinkModelArgs {
  static constexpr int kMaxSteps = 63;      // the loopback group's 64 ranks
  const std::uint32_t* computed = nullptr;  // per piece of a chunk of this rank's partial
  int owners[kMaxSteps] = {};               // the chunk slot i stands for
  int steps = 0;
  // Each chunk's pieces: piece j of chunk c is computed once
  // computed[c * pieces + j] == epoch; the link carries them one by one, and
  // releases slot i with its last piece.
  int pieces = 1;
  std::uint32_t* slot_flags = nullptr;
  std::uint32_t epoch = 0;
  std::uint64_t transfer_ns = 0;  // a piece's
  std::uint64_t timeout_ns = 0;
  std::uint32_t* error_words = nullptr;
};
rt::Status enqueue_link_model(const LinkModelArgs& args, rt::StreamHandle stream);

// One thread that spins for `ns` of device time: device work of a known
// length in stream order (the tests hold a stream with it).
rt::Status enqueue_link_delay(std::uint64_t ns, rt::StreamHandle stream);

}  // namespace asynctp::gpu
