// A C ABI over the native kernel's host interface, for the benchmark only:
// bench/native_kernel_torch.py loads it (ctypes, libasynctp_native.so: the
// CMake target asynctp_native_kernel_capi, carried as .devbin/gpu/)
// to time the native kernel interleaved with torch.mm and PyTorch's
// _async_input_mm in one process, under the same clocks and power state.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "async_input_gemm.hpp"

namespace nat = asynctp::cuda::native;

extern "C" {

int nk_config_count() { return static_cast<int>(nat::native_gemm_configs().size()); }

const char* nk_config_name(int i) {
  const auto& all = nat::native_gemm_configs();
  return (i >= 0 && i < static_cast<int>(all.size())) ? all[size_t(i)].name : nullptr;
}

// The config choose_native_gemm_config picks for this problem (pointers are
// placeholders: only shapes, layout and max_sms matter), or nullptr.
const char* nk_choose(int64_t m_per_chunk, int64_t n, int64_t k, int world_size, int b_col_major,
                      int max_sms) {
  static uint32_t words[4];
  nat::NativeGemmArgs args;
  args.a = args.b = args.c = reinterpret_cast<void*>(uintptr_t(256));
  args.b_col_major = b_col_major != 0;
  args.m_per_chunk = m_per_chunk;
  args.n = n;
  args.k = k;
  args.world_size = world_size;
  args.chunk_flags = words;
  args.error_words = words;
  args.timeout_ns = 1;
  args.max_sms = max_sms;
  const nat::NativeGemmConfig* c = nat::choose_native_gemm_config(args);
  return c ? c->name : nullptr;
}

// Returns a cudaError_t; cudaErrorInvalidValue (1) when the config is unknown
// or cannot implement the call.
int nk_launch(const char* name, int swizzle, const void* a, const void* b, int b_col_major,
              void* c, int64_t m_per_chunk, int64_t n, int64_t k, int world_size, int pivot,
              const uint32_t* flags, uint32_t epoch, uint64_t timeout_ns, uint32_t* error_words,
              int max_sms, void* stream) {
  const nat::NativeGemmConfig* found = nat::find_native_gemm_config(name ? name : "");
  if (!found) return cudaErrorInvalidValue;
  nat::NativeGemmConfig config = *found;
  if (swizzle > 0) config.swizzle = swizzle;
  nat::NativeGemmArgs args;
  args.a = a;
  args.b = b;
  args.b_col_major = b_col_major != 0;
  args.c = c;
  args.m_per_chunk = m_per_chunk;
  args.n = n;
  args.k = k;
  args.world_size = world_size;
  args.pivot = pivot;
  args.chunk_flags = flags;
  args.epoch = epoch;
  args.timeout_ns = timeout_ns;
  args.error_words = error_words;
  args.max_sms = max_sms;
  return static_cast<int>(nat::launch(config, args, nullptr, static_cast<cudaStream_t>(stream)));
}

}  // extern "C"
