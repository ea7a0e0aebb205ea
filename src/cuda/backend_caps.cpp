#include "cuda/backend_caps.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config_facts.hpp"
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

bool has_layout(const nat::NativeGemmConfig& c, bool col_major) {
  return col_major ? c.has_b_col_major : c.has_b_row_major;
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

core::BackendCaps cuda_caps(const DeviceInfo& device, const core::ProblemDesc& problem) {
  core::BackendCaps caps;
  caps.name = "cuda sm_" + std::to_string(device.major) + std::to_string(device.minor);
  caps.min_pipelined_chunk_rows = 128;
  caps.sm_count = device.sm_count;
  caps.single_hardware_queue = device.single_hardware_queue;
  if (device.major != 9 || device.minor != 0) {
    caps.native_unsupported_reason = "the native kernel is built for sm_90a (Hopper)";
    return caps;
  }
  const bool col_major = problem.b_layout == core::Layout::col_major;
  bool built = false;
  for (const auto& c : nat::native_gemm_configs()) built = built || has_layout(c, col_major);
  if (!built) {
    caps.native_unsupported_reason = "no native kernel was built for this B layout";
    return caps;
  }
  caps.native_supported = true;
  caps.native_configs = nat::native_config_facts(shape_query(problem));
  return caps;
}

}  // namespace asynctp::cuda
