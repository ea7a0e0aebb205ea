// The CUDA implementation of gpu/stream_memops.hpp.
#include "gpu/stream_memops.hpp"

// <cuda.h> for the driver's types and flag values only; no libcuda symbol is
// referenced.
#include <cuda.h>

#include <cstring>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::gpu {
namespace {

using WriteValue32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using WaitValue32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using MemsetD32 = CUresult(CUDAAPI*)(CUdeviceptr, unsigned int, size_t, CUstream);

// 12000: the CUDA 12 ABI of these symbols (the _v2 variants), unchanged in 13.
template <class Fn>
Fn driver_entry(const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
    (void)cudaGetLastError();
    throw Error(ErrorCode::backend, std::string("CUDA driver entry point ") + symbol +
                                        " is unavailable (" + cudaGetErrorName(e) +
                                        "); stream memory operations need a CUDA 12+ driver");
  }
  Fn fn = nullptr;
  static_assert(sizeof fn == sizeof p, "function and object pointers differ in size");
  std::memcpy(&fn, &p, sizeof fn);
  return fn;
}

void check_driver(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  throw Error(ErrorCode::backend,
              std::string("CUDA driver ") + what + " failed with CUresult " + std::to_string(r));
}

CUdeviceptr address(const std::uint32_t* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace

void memset_d32(cudaStream_t stream, std::uint32_t* device_address, std::uint32_t value,
                std::size_t count) {
  static const MemsetD32 fn = driver_entry<MemsetD32>("cuMemsetD32Async");
  check_driver(fn(address(device_address), value, count, reinterpret_cast<CUstream>(stream)),
               "cuMemsetD32Async");
}

void write_value32(cudaStream_t stream, std::uint32_t* device_address, std::uint32_t value) {
  static const WriteValue32 fn = driver_entry<WriteValue32>("cuStreamWriteValue32");
  check_driver(fn(reinterpret_cast<CUstream>(stream), address(device_address), value,
                  CU_STREAM_WRITE_VALUE_DEFAULT),
               "cuStreamWriteValue32");
}

void wait_value32_equal(cudaStream_t stream, const std::uint32_t* device_address,
                        std::uint32_t value) {
  static const WaitValue32 fn = driver_entry<WaitValue32>("cuStreamWaitValue32");
  check_driver(fn(reinterpret_cast<CUstream>(stream), address(device_address), value,
                  CU_STREAM_WAIT_VALUE_EQ),
               "cuStreamWaitValue32");
}

}  // namespace asynctp::gpu
