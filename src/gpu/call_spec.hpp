// One rank's call after planning and agreement: everything the device work
// needs, with every pointer resolved, for either runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// How a peer's chunk reaches this rank (the loopback models of
// asynctp/cuda.hpp; transports over real links bring their own producer).
enum class Link { pcie, arrival };

struct CallSpec {
  core::ProblemDesc problem;
  core::Plan plan;
  Link link = Link::pcie;
  double link_gbps = 0;
  std::vector<const void*> shards;  // chunk c = rank c's shard (device memory)
  TensorView b;
  TensorView c_out;
  void* gathered = nullptr;  // (world_size * m) x k, row-major
  bool gathered_is_output = false;  // the caller's a_gathered_out, not a workspace
  // Every GEMM of the call reads this rank's chunk from shards[rank] (native
  // on a backend whose kernel can, RankBackend::native_reads_local_shard;
  // pipelined), none from `gathered`: its copy there is made only for the
  // caller (gathered_is_output), beside the GEMMs, not ahead of them.
  bool local_chunk_in_place = false;
  rt::StreamHandle stream = nullptr;
  bool capturing = false;  // the caller's stream is capturing a graph
  std::uint32_t epoch = 1;
  std::int64_t timeout_ms = 0;
  // The peers' chunks in the order the producer moves them (the schedule's
  // order, pivot excluded, unless a test hook reordered it).
  std::vector<int> arrival_order;
  std::vector<bool> dropped;  // per chunk: never moved nor signalled (tests)
  // Each chunk moves and is signalled as this many equal row pieces (flag of
  // piece j of chunk c: c * pieces + j). Finer signals shorten the native
  // GEMM's tail after the last byte arrives (gpu::signal_pieces chooses).
  int pieces = 1;
  // The runtime backend's native kernel for this call (RankBackend::choose);
  // empty unless plan.algorithm is native.
  std::string native_kernel;

  std::size_t chunk_bytes() const {
    return static_cast<std::size_t>(problem.m * problem.k) * element_size(problem.dtype);
  }
  std::size_t piece_bytes() const { return chunk_bytes() / static_cast<std::size_t>(pieces); }
  std::size_t row_bytes() const {
    return static_cast<std::size_t>(problem.k) * element_size(problem.dtype);
  }
  void* gathered_chunk(int c) const {
    return static_cast<char*>(gathered) + chunk_bytes() * static_cast<std::size_t>(c);
  }
  // Where a GEMM reads chunk c's rows.
  const void* gemm_rows(int c) const {
    return local_chunk_in_place && c == problem.rank ? shards[static_cast<std::size_t>(c)]
                                                     : gathered_chunk(c);
  }

  // The native kernels see the signal pieces as their chunks: the same rows
  // in the same order, finer flags, the pivot chunk's first piece first.
  std::int64_t kernel_chunk_rows() const { return problem.m / pieces; }
  int kernel_chunks() const { return problem.world_size * pieces; }
  int kernel_pivot() const { return problem.rank * pieces; }
  // Those chunks and their gate into a native kernel's arguments (CUDA's
  // and HIP's argument structs name these fields alike).
  template <typename KernelArgs>
  void fill_kernel_chunks(KernelArgs& args, const std::uint32_t* flags) const {
    args.m_per_chunk = kernel_chunk_rows();
    args.n = problem.n;
    args.k = problem.k;
    args.world_size = kernel_chunks();
    args.pivot = kernel_pivot();
    args.chunk_flags = flags;
    args.epoch = epoch;
  }
};

// Bytes of the gathered A of an all-gather + matmul: every rank's m x k chunk.
inline std::size_t gathered_bytes(const core::ProblemDesc& p) {
  return static_cast<std::size_t>(p.m * p.k) * element_size(p.dtype) *
         static_cast<std::size_t>(p.world_size);
}

// The chunk (= rank) a kernel's error word names: the kernel counts signal
// pieces from 1 (0 = no timeout); the answer counts chunks the same way.
inline std::uint32_t chunk_word_of_piece_word(std::uint32_t piece_word, int pieces) {
  return piece_word == 0 ? 0 : 1 + (piece_word - 1) / static_cast<std::uint32_t>(pieces);
}

// Most signal pieces per chunk (sizes the flags, release words and events;
// gpu::signal_pieces chooses a call's).
inline constexpr int kMaxSignalPieces = 4;
}  // namespace asynctp::gpu
