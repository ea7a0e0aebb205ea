// One rank's reduce-scatter call after planning and agreement, for the
// loopback transport's schedule (gpu/reduce_scatter_enqueue.hpp): every
// pointer resolved, for either runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Where an owner receives its peers' partials: W - 1 slots of m x n (slot i
// holds what arrives at ring step i, core::partial_slot) and a flag per slot.
struct ReceiveSide {
  void* slots = nullptr;
  std::uint32_t* flags = nullptr;
};

struct ReduceScatterSpec {
  core::ProblemDesc problem;  // m = rows each rank receives, M = W * m
  core::Plan plan;
  std::string native_kernel;  // native only: the config the plan chose
  Link link = Link::pcie;
  double link_gbps = 0;
  // The peers' partials of this rank's chunk are computed by this rank
  // before its timed span (bench/NOTES.md), so no rank waits on another
  // within a call and ranks may run one after another (serialize_ranks).
  // Each slot is then made ready at the time its partial would land: on the
  // arrival link after the modelled transfer time; on the PCIe link by this
  // rank's own copy engines moving the slot's bytes through the pinned
  // bounce and back, gated like a real shipment (self_shipped). Otherwise
  // (the PCIe link, ranks concurrent) every rank ships its partials to their
  // owners' slots for real.
  bool modelled = false;
  bool self_shipped() const { return modelled && link == Link::pcie; }
  TensorView a;    // this rank's A (M x k), row-major
  TensorView b;    // this rank's B slice (k x n)
  TensorView out;  // this rank's rows of the sum (m x n)
  // modelled: every rank's A and B (rank s's partial of this rank's chunk).
  std::vector<TensorView> all_a, all_b;
  // real: every owner's receive side, and the event of its last reduction
  // (null when there is none to wait for, or while capturing).
  std::vector<ReceiveSide> owners;
  std::vector<rt::EventHandle> owner_reduced;
  void* partial = nullptr;  // M x n in the output dtype: this rank's partial
  ReceiveSide mine;         // this rank's own slots and flags
  rt::StreamHandle stream = nullptr;
  bool capturing = false;
  std::uint32_t epoch = 1;
  std::int64_t timeout_ms = 0;

  // The native grid signals each chunk of the partial in this many row
  // pieces (CheckedCall::pieces), the arrival model carrying each as soon as
  // it is computed: the link starts on the first piece, not the whole first
  // chunk. 1 for library GEMMs and over PCIe.
  int pieces = 1;

  std::size_t elem() const { return element_size(problem.dtype); }
  std::size_t row_bytes() const { return static_cast<std::size_t>(problem.n) * elem(); }
  std::size_t chunk_bytes() const { return static_cast<std::size_t>(problem.m) * row_bytes(); }
  char* partial_chunk(int c) const {
    return static_cast<char*>(partial) + chunk_bytes() * static_cast<std::size_t>(c);
  }
  static char* slot_of(const ReceiveSide& side, int slot, std::size_t chunk_bytes) {
    return static_cast<char*>(side.slots) + chunk_bytes * static_cast<std::size_t>(slot);
  }
  // Rows [c*m, (c+1)*m) of an M x k row-major A.
  static const void* a_rows(const TensorView& a, std::int64_t row) {
    return static_cast<const char*>(a.data) +
           static_cast<std::size_t>(row * a.cols) * element_size(a.dtype);
  }
};

// Bytes of the per-rank workspace of a reduce-scatter call.
inline std::size_t partial_bytes(const core::ProblemDesc& p) {
  return static_cast<std::size_t>(p.gathered_rows() * p.n) * element_size(p.dtype);
}
inline std::size_t slots_bytes(const core::ProblemDesc& p) {
  return static_cast<std::size_t>(p.world_size - 1) * static_cast<std::size_t>(p.m * p.n) *
         element_size(p.dtype);
}
// The loopback reduction's fp32 sum between runs of slots, where it adds
// two or more (enqueue_reduce_as_slots_land).
inline std::size_t reduce_sum_bytes(const core::ProblemDesc& p) {
  return p.world_size > 2 ? static_cast<std::size_t>(p.m * p.n) * sizeof(float) : 0;
}

}  // namespace asynctp::gpu
