// The native async-input GEMM: config table, checks and dispatch to the
// instantiations (instances/*.cu). No CUTLASS here.
#include "async_input_gemm.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "config_facts.hpp"
#include "core/kernel_error_words.hpp"
#include "instances.hpp"

namespace asynctp::cuda::native {
namespace {

using detail::InstanceInfo;

#define ASYNCTP_NATIVE_LIST_INSTANCE(id) &detail::instance_##id(),
// The instances of one side (instances.hpp keeps a list per side).
const std::vector<const InstanceInfo*>& instances(ChunkSync sync) {
  static const std::vector<const InstanceInfo*> input = {
      ASYNCTP_NATIVE_INSTANCES(ASYNCTP_NATIVE_LIST_INSTANCE)};
  static const std::vector<const InstanceInfo*> output = {
      ASYNCTP_NATIVE_OUTPUT_INSTANCES(ASYNCTP_NATIVE_LIST_INSTANCE)};
  return sync == ChunkSync::release_output ? output : input;
}
#undef ASYNCTP_NATIVE_LIST_INSTANCE

bool same_kernel(const InstanceInfo& i, const NativeGemmConfig& c) {
  return i.schedule == c.schedule && i.tile_m == c.tile_m && i.tile_n == c.tile_n &&
         i.tile_k == c.tile_k && i.cluster_m == c.cluster_m && i.cluster_n == c.cluster_n;
}

const InstanceInfo* find_instance(const NativeGemmConfig& c, bool b_col_major) {
  for (const InstanceInfo* i : instances(c.sync)) {
    if (same_kernel(*i, c) && i->b_col_major == b_col_major) return i;
  }
  return nullptr;
}

// The configs offered to the planner: a kernel shape and a tile-order
// swizzle. `efficiency` is the per-tile efficiency relative to cooperative
// 128x256, measured on the H200; the planner (core::choose_native_config)
// multiplies it with the wave efficiency, and ties go to the earlier entry.
// `max_m` (0: any) limits where the chooser offers a config (total M =
// world_size * m_per_chunk); it can still be launched by name anywhere.
//   coop 256x160 2x1: N = 1280/7168-like shapes (8 tiles of 160), m gran. 512;
//     won the measured ties (bench/NOTES.md, "native kernel")
//   coop 128x256 2x1 (= PyTorch's _async_input_mm config), m granularity 256
//   ping-pong 128x128 2x1, m granularity 256: equal to coop 128x256 in short
//     bursts but 2-9 % slower in sustained W = 8 loopback runs at N = 8192
//     (bench/NOTES.md v8), hence 0.95
//   ping-pong 128x128 1x2: m_per_chunk a multiple of 128 only
//   ping-pong 64x128 1x2 and 64x256 1x1: the only configs for m_per_chunk 64
//     (decode-like shapes), and finer tiles where 128-row ones leave SMs idle.
//     Not measured yet: efficiency 0, so the rules never pick them for auto
//     (core::NativeConfig); a calibrated cost table with their samples
//     (scripts/device/calibrate.sh) offers them, and a forced native runs them.
// The reduce-scatter side (ChunkSync::release_output) has one kernel shape,
// coop 128x256 2x1 (m granularity 256), the all-gather side's most general
// cooperative one; its efficiency is relative to the same reference (its
// epilogue waits for each tile's stores: bench/NOTES.md states the cost).
struct ConfigSpec {
  ChunkSync sync;
  KernelSchedule schedule;
  int tile_m, tile_n, tile_k, cluster_m, cluster_n, swizzle;
  double efficiency;
  std::int64_t max_m;
};
constexpr ConfigSpec kConfigSpecs[] = {
    {ChunkSync::acquire_input, KernelSchedule::kCooperative, 256, 160, 64, 2, 1, 2, 1.00, 0},
    {ChunkSync::acquire_input, KernelSchedule::kCooperative, 128, 256, 64, 2, 1, 1, 1.00, 0},
    {ChunkSync::acquire_input, KernelSchedule::kPingpong, 128, 128, 64, 2, 1, 1, 0.95, 0},
    {ChunkSync::acquire_input, KernelSchedule::kPingpong, 128, 128, 64, 1, 2, 4, 0.92, 0},
    {ChunkSync::acquire_input, KernelSchedule::kPingpong, 64, 128, 64, 1, 2, 4, 0, 0},
    {ChunkSync::acquire_input, KernelSchedule::kPingpong, 64, 256, 64, 1, 1, 4, 0, 0},
    {ChunkSync::release_output, KernelSchedule::kCooperative, 128, 256, 64, 2, 1, 1, 1.00, 0},
};

std::string config_name(const ConfigSpec& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%s_%dx%dx%d_c%dx%d_s%d",
                s.sync == ChunkSync::release_output ? "rs_" : "",
                s.schedule == KernelSchedule::kCooperative ? "coop" : "pp", s.tile_m, s.tile_n,
                s.tile_k, s.cluster_m, s.cluster_n, s.swizzle);
  return buf;
}

// Largest group (<= the config's swizzle) that divides the M clusters of one
// chunk, so a swizzle group never straddles two chunks.
int clamp_group(const NativeGemmConfig& c, const NativeGemmArgs& a) {
  const int64_t clusters_per_chunk = a.m_per_chunk / c.m_granularity;
  int g = c.swizzle > 1 ? c.swizzle : 1;
  while (g > 1 && clusters_per_chunk % g != 0) --g;
  return g;
}

// The grid limit in CTAs: max_sms clamped to the device.
int sm_limit(const NativeGemmArgs& a) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  return (a.max_sms > 0 && a.max_sms < sms) ? a.max_sms : sms;
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

bool fail(std::string* reason, const std::string& why) {
  if (reason) *reason = why;
  return false;
}

}  // namespace

const char* schedule_name(KernelSchedule s) {
  return s == KernelSchedule::kCooperative ? "cooperative" : "pingpong";
}

namespace {

// Both sides' configs, each side's in kConfigSpecs order.
const std::array<std::vector<NativeGemmConfig>, 2>& configs_by_side() {
  static const std::array<std::vector<NativeGemmConfig>, 2> sides = [] {
    static std::vector<std::string> names;  // owns the name strings
    names.reserve(sizeof(kConfigSpecs) / sizeof(kConfigSpecs[0]));
    std::array<std::vector<NativeGemmConfig>, 2> out;
    for (const ConfigSpec& s : kConfigSpecs) {
      NativeGemmConfig c{};
      c.sync = s.sync;
      c.schedule = s.schedule;
      c.tile_m = s.tile_m;
      c.tile_n = s.tile_n;
      c.tile_k = s.tile_k;
      c.cluster_m = s.cluster_m;
      c.cluster_n = s.cluster_n;
      c.m_granularity = s.tile_m * s.cluster_m;
      c.swizzle = s.swizzle;
      c.has_b_row_major = find_instance(c, false) != nullptr;
      c.has_b_col_major = find_instance(c, true) != nullptr;
      c.efficiency = s.efficiency;
      c.max_m = s.max_m;
      if (!c.has_b_row_major && !c.has_b_col_major) continue;  // not built
      names.push_back(config_name(s));
      c.name = names.back().c_str();
      out[c.sync == ChunkSync::release_output ? 1 : 0].push_back(c);
    }
    return out;
  }();
  return sides;
}

}  // namespace

const std::vector<NativeGemmConfig>& native_gemm_configs(ChunkSync sync) {
  return configs_by_side()[sync == ChunkSync::release_output ? 1 : 0];
}

const NativeGemmConfig* find_native_gemm_config(const std::string& name) {
  for (const auto& side : configs_by_side()) {
    for (const NativeGemmConfig& c : side) {
      if (name == c.name) return &c;
    }
  }
  return nullptr;
}

bool can_implement(const NativeGemmConfig& c, const NativeGemmArgs& a, std::string* reason) {
  const bool releases = c.sync == ChunkSync::release_output;
  if (a.sync != c.sync) {
    return fail(reason, std::string("config ") + (c.name ? c.name : "?") + " is the " +
                            (releases ? "reduce-scatter" : "all-gather") + " side's kernel");
  }
  if (!find_instance(c, a.b_col_major)) {
    return fail(reason, std::string("config ") + (c.name ? c.name : "?") + " was not built for " +
                            (a.b_col_major ? "column" : "row") + "-major B");
  }
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    return fail(reason, "no usable CUDA device");
  }
  if (major != 9 || minor != 0) {
    return fail(reason, "the native kernel is built for sm_90a (Hopper); device " +
                            std::to_string(device) + " is sm_" + std::to_string(major) +
                            std::to_string(minor));
  }
  if (!a.a || !a.b || !a.c) return fail(reason, "a, b and c must not be null");
  if (!aligned16(a.a) || !aligned16(a.b) || !aligned16(a.c)) {
    return fail(reason, "a, b and c must be 16-byte aligned (TMA)");
  }
  if (a.world_size < 1) return fail(reason, "world_size must be >= 1");
  if (a.pivot < 0 || a.pivot >= a.world_size)
    return fail(reason, "pivot must be in [0, world_size)");
  if (a.m_per_chunk <= 0 || a.n <= 0 || a.k <= 0)
    return fail(reason, "m_per_chunk, n and k must be > 0");
  if (a.m_per_chunk % c.m_granularity != 0) {
    return fail(reason, "m_per_chunk (" + std::to_string(a.m_per_chunk) +
                            ") must be a multiple of " + std::to_string(c.m_granularity) +
                            " (tile_m * cluster_m of " + c.name + ")");
  }
  if (a.n % 8 != 0 || a.k % 8 != 0) {
    return fail(reason, "n and k must be multiples of 8 (16-byte TMA strides)");
  }
  const int64_t m = int64_t(a.world_size) * a.m_per_chunk;
  const int64_t limit = INT32_MAX;
  if (m > limit || a.n > limit || a.k > limit || m * a.k > limit || a.k * a.n > limit ||
      m * a.n > limit) {
    return fail(reason, "each tensor must have fewer than 2^31 elements (32-bit indexing)");
  }
  if (releases) {
    if (a.chunks_in_kernel != 0) {
      return fail(reason, "chunks_in_kernel must be 0 for the reduce-scatter side (it awaits no chunk)");
    }
    if (!a.done_flags || !a.done_counters) {
      return fail(reason, "done_flags and done_counters must not be null");
    }
    if (a.a_local) return fail(reason, "a_local must be null for the reduce-scatter side");
  } else {
    if (a.chunks_in_kernel < 0 || a.chunks_in_kernel > a.world_size) {
      return fail(reason, "chunks_in_kernel must be in [0, world_size] (0: every chunk)");
    }
    if (!a.chunk_flags) return fail(reason, "chunk_flags must not be null");
    if (!a.error_words || (reinterpret_cast<std::uintptr_t>(a.error_words) & 3u) != 0) {
      return fail(reason, "error_words must be 3 aligned device-visible words");
    }
    if (a.timeout_ns == 0) return fail(reason, "timeout_ns must be > 0 (every wait is bounded)");
    if (a.a_local) {
      if (!aligned16(a.a_local)) return fail(reason, "a_local must be 16-byte aligned (TMA)");
      if (a.local_chunks < 1 || a.local_chunks > a.world_size - a.pivot) {
        return fail(reason, "local_chunks must be in [1, world_size - pivot] with a_local");
      }
    }
  }
  if (sm_limit(a) < c.cluster_m * c.cluster_n) {
    return fail(reason, "max_sms is smaller than one cluster of " + std::string(c.name));
  }
  return true;
}

std::size_t workspace_size(const NativeGemmConfig&, const NativeGemmArgs&) {
  return 0;  // stock scheduler and epilogue need none; the gate uses the caller's words
}

cudaError_t launch(const NativeGemmConfig& c, const NativeGemmArgs& a, void* workspace,
                   cudaStream_t stream) {
  if (!can_implement(c, a, nullptr)) return cudaErrorInvalidValue;
  const InstanceInfo* inst = find_instance(c, a.b_col_major);
  return inst->launch(a, clamp_group(c, a), sm_limit(a), workspace, stream);
}

void preload_kernels(int device) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) return;
  static std::uint32_t words[4];
  NativeGemmArgs shape;
  shape.a = shape.b = shape.c = reinterpret_cast<void*>(std::uintptr_t{256});
  shape.n = 256;
  shape.k = 256;
  shape.world_size = 1;
  shape.chunk_flags = words;
  shape.error_words = words;
  shape.timeout_ns = 1;
  shape.done_flags = words;
  shape.done_counters = words;
  for (const auto& side : configs_by_side()) {
    for (const NativeGemmConfig& c : side) {
      shape.sync = c.sync;
      shape.m_per_chunk = c.m_granularity;
      for (const bool col_major : {false, true}) {
        shape.b_col_major = col_major;
        (void)grid_size(c, shape);  // the occupancy query loads the kernel
      }
    }
  }
  (void)cudaSetDevice(previous);
}

std::vector<core::NativeConfig> native_config_facts(const NativeGemmArgs& a) {
  std::vector<core::NativeConfig> out;
  for (const NativeGemmConfig& c : native_gemm_configs(a.sync)) {
    if (!(a.b_col_major ? c.has_b_col_major : c.has_b_row_major)) continue;
    core::NativeConfig fact;
    fact.name = c.name;
    fact.m_granularity = c.m_granularity;
    fact.tile_m = c.tile_m;
    fact.tile_n = c.tile_n;
    fact.efficiency = c.efficiency;
    fact.max_m = c.max_m;
    if (!can_implement(c, a, &fact.refusal) && fact.refusal.empty()) fact.refusal = "refused";
    fact.grid = grid_size(c, a);
    out.push_back(fact);
  }
  return out;
}

const NativeGemmConfig* choose_native_gemm_config(const NativeGemmArgs& a) {
  core::ProblemDesc problem;
  problem.world_size = a.world_size;
  problem.rank = a.pivot;
  problem.m = a.m_per_chunk;
  problem.n = a.n;
  problem.k = a.k;
  const std::vector<core::NativeConfig> facts = native_config_facts(a);
  const core::NativeConfig* chosen = core::choose_native_config(problem, facts, sm_limit(a));
  return chosen ? find_native_gemm_config(chosen->name) : nullptr;
}

int grid_size(const NativeGemmConfig& c, const NativeGemmArgs& a) {
  if (!can_implement(c, a, nullptr)) return 0;
  const InstanceInfo* inst = find_instance(c, a.b_col_major);
  return inst->grid(a, clamp_group(c, a), sm_limit(a));
}

std::string native_gemm_error_message(const std::uint32_t words[3], std::uint64_t timeout_ns) {
  return core::chunk_wait_error_message("native GEMM", words, timeout_ns);
}

}  // namespace asynctp::cuda::native
