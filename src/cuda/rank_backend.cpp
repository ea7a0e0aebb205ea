#include "cuda/rank_backend.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "asynctp/error.hpp"
#include "config_facts.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu/device_checks.hpp"

namespace asynctp::cuda {

std::string runtime_unavailable_reason(int device) {
  if (std::string why = gpu::device_unavailable_reason(device); !why.empty()) return why;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cannot query CUDA device " + std::to_string(device);
  }
  if (major < 8) {
    return "CUDA device " + std::to_string(device) + " is sm_" + std::to_string(major) +
           "x; bf16 GEMMs need sm_80 or newer";
  }
  return "";
}

std::unique_ptr<gpu::RankBackend> make_rank_backend(int device) {
  return std::make_unique<cuda::CudaRankBackend>(device);
}

namespace {

namespace nat = native;

// Pointers for a shape-only query of the kernel configs: the real pointers'
// alignment was checked by validation, and the gathered buffer may not exist
// yet when planning.
nat::ChunkSync side_of(const core::ProblemDesc& p) {
  return p.op == core::OpKind::matmul_reduce_scatter ? nat::ChunkSync::release_output
                                                     : nat::ChunkSync::acquire_input;
}

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
  args.sync = side_of(p);
  args.done_flags = placeholder_words;
  args.done_counters = placeholder_words;
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
  cudaDeviceProp props{};
  check_cuda(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties");
  info.name = props.name;
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
  caps.cost_table = core::cost_table_for(device.name);
  if (!caps.cost_table) {
    caps.no_cost_table = "no cost table for " + device.name +
                         " (measure one: scripts/device/calibrate.sh, then ASYNCTP_COST_TABLE)";
  }
  if (device.major != 9 || device.minor != 0) {
    caps.native_unsupported_reason = "the native kernel is built for sm_90a (Hopper)";
    return caps;
  }
  const bool col_major = problem.b_layout == core::Layout::col_major;
  bool built = false;
  for (const auto& c : nat::native_gemm_configs(side_of(problem))) {
    built = built || has_layout(c, col_major);
  }
  if (!built) {
    caps.native_unsupported_reason = "no native kernel was built for this B layout";
    return caps;
  }
  caps.native_supported = true;
  caps.native_library_tail = true;  // the kernel can leave chunks (chunks_in_kernel)
  caps.native_configs = nat::native_config_facts(shape_query(problem));
  return caps;
}

CudaRankBackend::CudaRankBackend(int device) : info_(query_device(device)) {
  if (info_.major == 9 && info_.minor == 0) native::preload_kernels(device);
}

gpu::BackendChoice CudaRankBackend::choose(const core::ProblemDesc& problem,
                                           const core::ResolvedOptions& options) const {
  (void)options;  // the tile options choose among the configs in core::plan
  gpu::BackendChoice out;
  out.caps = cuda_caps(info_, problem);
  // sm_90's persistent grid in bf16: 574-655 TFLOP/s alone on the H100 at
  // the reduce-scatter's shapes (bench/results/2026-12-07-session26-h100.md,
  // call 4), the H200's SMs the same.
  if (info_.major == 9) out.native_tflops = 600;
  return out;
}

void CudaRankBackend::launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                                    const std::uint32_t* flags) {
  const native::NativeGemmConfig* config = native::find_native_gemm_config(call.native_kernel);
  if (config == nullptr) {
    throw Error(ErrorCode::backend,
                "native GEMM launch with unknown kernel config '" + call.native_kernel + "'");
  }
  native::NativeGemmArgs args;
  args.a = call.gathered;
  args.b = call.b.data;
  args.b_col_major = call.problem.b_layout == core::Layout::col_major;
  args.c = call.c_out.data;
  call.fill_kernel_chunks(args, flags);
  if (call.local_chunk_in_place) {
    args.a_local = call.shards.at(static_cast<std::size_t>(call.problem.rank));
    args.local_chunks = call.pieces;  // the rank's chunk as the kernel's chunks
  }
  // A library tail takes the last chunk's signal pieces (gpu::enqueue_gemm).
  if (call.plan.native_tail == NativeTail::library) {
    args.chunks_in_kernel = call.kernel_chunks() - call.pieces;
  }
  args.timeout_ns = static_cast<std::uint64_t>(call.timeout_ms) * 1'000'000u;
  args.error_words = static_cast<std::uint32_t*>(res.error_words.get());
  args.max_sms = 0;  // the whole device: nothing the grid waits on needs an SM
  args.tile_stamps = res.trace.kernel_stamps();  // null unless the call is traced
  std::string why;
  if (!native::can_implement(*config, args, &why)) {
    throw Error(ErrorCode::unsupported,
                std::string("native kernel ") + config->name + " cannot run this call: " + why);
  }
  check_cuda(native::launch(*config, args, nullptr, res.compute.get()), "native GEMM launch");
}

void CudaRankBackend::launch_native_reduce_scatter(const gpu::NativeReduceScatter& call,
                                                   gpu::RankResources& res) {
  const native::NativeGemmConfig* config = native::find_native_gemm_config(call.kernel);
  if (config == nullptr) {
    throw Error(
        ErrorCode::backend,
        "native reduce-scatter GEMM launch with unknown kernel config '" + call.kernel + "'");
  }
  native::NativeGemmArgs args;
  args.sync = native::ChunkSync::release_output;
  args.a = call.a.data;
  args.b = call.b.data;
  args.b_col_major = call.problem.b_layout == core::Layout::col_major;
  args.c = call.partial;
  // The pieces as the grid's chunks: the same rows in the same order.
  args.m_per_chunk = call.problem.m / call.pieces;
  args.n = call.problem.n;
  args.k = call.problem.k;
  args.world_size = call.problem.world_size * call.pieces;
  // core::send_order: the next rank's chunk first.
  args.pivot = ((call.problem.rank + 1) % call.problem.world_size) * call.pieces;
  args.epoch = call.epoch;
  args.done_flags = call.done_flags;
  args.done_counters = call.done_counters;
  // Cluster rounding may leave one more SM idle than asked.
  args.max_sms = call.sms_left_free > 0 ? info_.sm_count - call.sms_left_free : 0;
  args.tile_stamps = res.trace.kernel_stamps();  // null unless the call is traced
  std::string why;
  if (!native::can_implement(*config, args, &why)) {
    throw Error(ErrorCode::unsupported,
                std::string("native kernel ") + config->name + " cannot run this call: " + why);
  }
  check_cuda(native::launch(*config, args, nullptr, res.compute.get()),
             "native reduce-scatter GEMM launch");
}

gpu::LibraryGemm* CudaRankBackend::library_gemm(int lane) noexcept {
  return lane == 0 || lane == 1 ? &cublas_[lane] : nullptr;
}

std::string CudaRankBackend::native_error_message(const std::uint32_t words[3],
                                                  std::uint64_t timeout_ns) const {
  return native::native_gemm_error_message(words, timeout_ns);
}

}  // namespace asynctp::cuda
