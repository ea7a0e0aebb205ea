// The native async-input GEMM on Hopper (sm_90a): host interface.
//
//   C (M x N, bf16, row-major) = A (M x K, bf16, row-major) @ B (K x N, bf16,
//   row- or column-major), fp32 accumulation, M = world_size * m_per_chunk.
//
// One persistent, warp-specialized TMA + WGMMA kernel (CUTLASS 4.x sm90
// collectives) per config. The rows of A form world_size chunks of
// m_per_chunk rows (chunk c = rank c's shard). Output tiles are visited chunk
// by chunk starting at the pivot chunk and wrapping around; a tile never
// straddles two chunks. Before the producer warp of a CTA issues the first
// TMA load of a chunk's rows, one lane polls chunk_flags[c] (system-scope
// acquire, __nanosleep back-off) until it equals `epoch`, then the warp
// issues fence.proxy.async.global. Every wait is bounded by timeout_ns: on
// expiry the kernel records the chunk in error_words and stops waiting (the
// result is then garbage; see native_gemm_error_message), so it never hangs.
//
// The same kernel family also runs the reduce-scatter side (ChunkSync::
// release_output): the stock mainloop waits on nothing, the tiles are visited
// in the same chunk order from the pivot (the send order: pivot = rank + 1),
// and the epilogue, once a tile's TMA stores are complete, counts it toward
// its chunk; the chunk's last tile releases done_flags[c] = epoch (system
// scope). Copy engines behind stream memory operations then ship the chunk.
//
// This header has no CUTLASS and no CUDA device code: include it anywhere.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace asynctp::cuda::native {

// What the persistent GEMM synchronizes on with its producer.
enum class ChunkSync {
  acquire_input,   // all-gather: waits for chunk_flags[c] before loading A's chunk c
  release_output,  // reduce-scatter: releases done_flags[c] once C's chunk c is stored
};

struct NativeGemmArgs {
  const void* a = nullptr;  // (world_size * m_per_chunk) x k, row-major, 16-byte aligned
  const void* b = nullptr;  // k x n; row-major (ld = n) or column-major (ld = k)
  bool b_col_major = false;
  void* c = nullptr;  // (world_size * m_per_chunk) x n, row-major
  std::int64_t m_per_chunk = 0, n = 0, k = 0;
  int world_size = 1, pivot = 0;
  // world_size 32-bit flags readable by the device (device memory, or mapped
  // pinned host memory); chunk c is ready when chunk_flags[c] == epoch.
  const std::uint32_t* chunk_flags = nullptr;
  std::uint32_t epoch = 1;
  std::uint64_t timeout_ns = 0;  // > 0
  // 3 device-visible words, zeroed by the caller before the launch. After the
  // kernel: [0] = 0 if every wait succeeded, else 1 + the first chunk whose
  // wait timed out; [1] = the flag value seen then; [2] = the epoch expected.
  std::uint32_t* error_words = nullptr;
  int max_sms = 0;  // grid size limit (CTAs); <= 0 = every SM of the device
  // ChunkSync::release_output only (chunk_flags, timeout_ns and error_words
  // are then unused): world_size flags, set to epoch as each chunk of C is
  // stored, and world_size tile counters, 0 before the launch (and after it).
  // (Kept last: the kernel instances read the fields above by offset.)
  ChunkSync sync = ChunkSync::acquire_input;
  std::uint32_t* done_flags = nullptr;
  std::uint32_t* done_counters = nullptr;
  // ChunkSync::acquire_input only: the kernel runs the first this many
  // chunks in schedule order (from the pivot) and leaves the rest, whose
  // flags it never reads, to the caller (the library tail); 0 = every chunk.
  int chunks_in_kernel = 0;
  // A traced call's tile stamps (kernel/tile_stamps.cuh), either side: 2 *
  // world_size device words of %globaltimer ns, [c] the first tile start of
  // chunk c, [world_size + c] its last tile end; the caller sets the first
  // half to all ones and the second to 0 before the launch. nullptr (every
  // untraced call): no stamps, a uniform branch per tile in the producer and
  // one in the epilogue. (Added after the fields above, which keep their
  // offsets.)
  std::uint64_t* tile_stamps = nullptr;
  // ChunkSync::acquire_input only: chunks pivot .. pivot + local_chunks - 1
  // (the rank's own rows, which the kernel starts on) read from a_local
  // (local_chunks * m_per_chunk rows x k, row-major, 16-byte aligned) instead
  // of from a, so that the caller need not copy them into a before the
  // launch; their flags are not read (the band is an input, complete at
  // launch). nullptr: every row from a.
  const void* a_local = nullptr;
  int local_chunks = 0;
};

enum class KernelSchedule { kCooperative, kPingpong };

struct NativeGemmConfig {
  const char* name;  // e.g. "pp_128x128x64_c2x1_s1"; "rs_" first for release_output
  ChunkSync sync;    // the op side this config's kernels were built for
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  // m_per_chunk must be a multiple of this (tile_m * cluster_m): the planner's
  // divisibility rule.
  int m_granularity;
  KernelSchedule schedule;
  // Tile-order swizzle: groups of `swizzle` M clusters are walked together
  // along N (L2 reuse of B). Clamped per call so a group never straddles two
  // chunks; 1 = plain raster along N.
  int swizzle;
  bool has_b_row_major;  // an instantiation exists for row-major B
  bool has_b_col_major;  // ... and for column-major B
  // Per-tile efficiency relative to cooperative 128x256, measured on the H200
  // (bench/NOTES.md; 0: not measured, see core::NativeConfig), and the
  // largest gathered M auto offers it for (0: any).
  double efficiency;
  std::int64_t max_m;
};

const char* schedule_name(KernelSchedule s);

// Every config of this build for one side, in a stable order.
const std::vector<NativeGemmConfig>& native_gemm_configs(ChunkSync sync = ChunkSync::acquire_input);
// nullptr when no config (of either side) has that name.
const NativeGemmConfig* find_native_gemm_config(const std::string& name);

// True when `config` can run `args` on the current device; otherwise false
// and *reason (when given) says why in one line. Checks the device (sm_90),
// shapes (m_per_chunk % m_granularity, n and k multiples of 8, < 2^31
// elements per tensor), 16-byte alignment, flags/error words, timeout, pivot,
// that the config was built for args.b_col_major and args.sync, and the
// words of that side (flags, error words and timeout, or done flags and
// counters).
bool can_implement(const NativeGemmConfig& config, const NativeGemmArgs& args,
                   std::string* reason = nullptr);

// Device workspace bytes launch() needs (0 for every config of this build).
std::size_t workspace_size(const NativeGemmConfig& config, const NativeGemmArgs& args);

// Enqueues the kernel on `stream`. Returns cudaErrorInvalidValue when
// can_implement is false (ask it for the reason), else the launch status.
// Host-side only work: TMA descriptors and one occupancy query per device.
cudaError_t launch(const NativeGemmConfig& config, const NativeGemmArgs& args, void* workspace,
                   cudaStream_t stream);

// The config the planner would choose for `args` (core::choose_native_config
// over native_config_facts of config_facts.hpp), or nullptr when no config
// can implement it.
const NativeGemmConfig* choose_native_gemm_config(const NativeGemmArgs& args);

// Loads every instance of this build on `device` now. CUDA loads kernels
// lazily, at their first use, and a load waits for work already on the
// device: seen on the H200, a first call whose stream was held up (a chunk
// wait, a peer that has not arrived) hung in the planner's first grid query.
// Backends call this when they are made, before any of their work is queued.
void preload_kernels(int device);

// Grid (CTAs) a launch would use, for logs and tests; 0 if it cannot run.
int grid_size(const NativeGemmConfig& config, const NativeGemmArgs& args);

// The message for the exception a caller throws after reading the error
// words back; "" when words[0] == 0. Names the chunk (= rank) that never came.
std::string native_gemm_error_message(const std::uint32_t words[3], std::uint64_t timeout_ns);

}  // namespace asynctp::cuda::native
