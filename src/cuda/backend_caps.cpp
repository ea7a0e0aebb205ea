#include "cuda/backend_caps.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_check.hpp"

namespace asynctp::cuda {
namespace {

namespace nat = native;

// Pointers for a shape-only query of the kernel configs: the real pointers'
// alignment was checked by validation, and the gathered buffer may not exist
// yet when planning.
nat::NativeGemmArgs shape_query(const core::ProblemDesc& p) {
  static std::uint32_t placeholder_words[4];
  void* aligned = reinterpret_cast<void*>(std::uintptr_t{256});
  nat::NativeGemmArgs args;
  args.a = aligned;
  args.b = aligned;
  args.c = aligned;
  args.b_col_major = p.b_layout == core::Layout::col_major;
  args.m_per_chunk = p.m;
  args.n = p.n;
  args.k = p.k;
  args.world_size = p.world_size;
  args.pivot = p.rank;
  args.chunk_flags = placeholder_words;
  args.error_words = placeholder_words;
  args.timeout_ns = 1;
  return args;
}

// Below this share of the SMs busy with output tiles, auto does not overlap.
// W = 8 and 4 loopback runs on the H200 (bench/results/2026-12-04-session6-
// h200.md): at 61 % (80 tiles of 128x256 on 132 SMs) and 48 %, native lost
// to decomposed by up to 22 % and pipelined did no better; at 97 % (128
// tiles of 256x160) and from one full wave up, native won.
constexpr double kMinNativeSmFill = 0.75;

// Why overlapping would not pay with `config` on this device, or "".
std::string underfilled_reason(const nat::NativeGemmConfig& config, const core::ProblemDesc& p,
                               int sm_count) {
  const std::int64_t tiles = (std::int64_t{p.world_size} * p.m / config.tile_m) *
                             ((p.n + config.tile_n - 1) / config.tile_n);
  if (sm_count <= 0 || double(tiles) >= kMinNativeSmFill * sm_count) return "";
  return "the native kernel's " + std::to_string(tiles) + " output tiles of " +
         std::to_string(config.tile_m) + "x" + std::to_string(config.tile_n) + " would keep " +
         std::to_string(tiles) + " of the " + std::to_string(sm_count) + " SMs busy, under " +
         std::to_string(int(kMinNativeSmFill * 100)) + " %, and per-chunk GEMMs fewer still";
}

bool has_layout(const nat::NativeGemmConfig& c, bool col_major) {
  return col_major ? c.has_b_col_major : c.has_b_row_major;
}

// The finest-grained config for this B layout: its granularity is the rule
// the planner states when no config fits.
const nat::NativeGemmConfig* finest(bool col_major) {
  const nat::NativeGemmConfig* best = nullptr;
  for (const auto& c : nat::native_gemm_configs()) {
    if (has_layout(c, col_major) && (!best || c.m_granularity < best->m_granularity)) best = &c;
  }
  return best;
}

}  // namespace

DeviceInfo query_device(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  check_cuda(cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, ordinal),
             "cudaDeviceGetAttribute(compute capability)");
  check_cuda(cudaDeviceGetAttribute(&info.minor, cudaDevAttrComputeCapabilityMinor, ordinal),
             "cudaDeviceGetAttribute(compute capability)");
  check_cuda(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, ordinal),
             "cudaDeviceGetAttribute(SM count)");
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  info.single_hardware_queue = connections != nullptr && std::strcmp(connections, "1") == 0;
  return info;
}

CudaCapsChoice cuda_caps(const DeviceInfo& device, const core::ProblemDesc& problem,
                         const core::ResolvedOptions& options) {
  CudaCapsChoice out;
  core::BackendCaps& caps = out.caps;
  caps.name = "cuda sm_" + std::to_string(device.major) + std::to_string(device.minor);
  caps.min_pipelined_chunk_rows = 128;
  if (device.single_hardware_queue) {
    caps.no_overlap_reason =
        "CUDA_DEVICE_MAX_CONNECTIONS=1 puts every stream in one hardware queue, so the copies "
        "run before or after the GEMM, never beside it";
  }
  const bool col_major = problem.b_layout == core::Layout::col_major;
  if (device.major != 9 || device.minor != 0) {
    caps.native_unsupported_reason = "the native kernel is built for sm_90a (Hopper)";
    return out;
  }
  const nat::NativeGemmConfig* fallback_rule = finest(col_major);
  if (!fallback_rule) {
    caps.native_unsupported_reason = "no native kernel was built for this B layout";
    return out;
  }
  caps.native_supported = true;

  const nat::NativeGemmConfig* config = nullptr;
  if (options.tile_m || options.tile_n) {
    for (const auto& c : nat::native_gemm_configs()) {
      if (!has_layout(c, col_major)) continue;
      if (options.tile_m && c.m_granularity != *options.tile_m) continue;
      if (options.tile_n && c.tile_n != *options.tile_n) continue;
      config = &c;
      break;
    }
    if (!config) {
      std::string offered;
      for (const auto& c : nat::native_gemm_configs()) {
        offered += (offered.empty() ? "" : ", ") + std::to_string(c.m_granularity) + "x" +
                   std::to_string(c.tile_n);
      }
      caps.native_supported = false;
      caps.native_unsupported_reason =
          "no native kernel config has tile M (granularity) x N = " +
          (options.tile_m ? std::to_string(*options.tile_m) : "any") + "x" +
          (options.tile_n ? std::to_string(*options.tile_n) : "any") + "; built: " + offered;
      return out;
    }
  } else {
    config = nat::choose_native_gemm_config(shape_query(problem));
  }
  const nat::NativeGemmConfig* rule = config ? config : fallback_rule;
  caps.default_tile_m = rule->m_granularity;
  caps.default_tile_n = rule->tile_n;
  if (config && problem.dtype == DType::bf16) {
    std::string why;
    if (nat::can_implement(*config, shape_query(problem), &why)) {
      out.config = config;
      caps.overlap_unprofitable_reason = underfilled_reason(*config, problem, device.sm_count);
    } else if (problem.m % config->m_granularity == 0 && problem.n % 8 == 0 && problem.k % 8 == 0) {
      // The planner's own rules pass but the kernel still refuses: say so.
      caps.native_supported = false;
      caps.native_unsupported_reason = why;
    }
  }
  return out;
}

}  // namespace asynctp::cuda
