// The CUDA backend's GEMM paths (gpu/gemm_paths.hpp): the chunk-gated CUTLASS
// kernel for native and cuBLAS for pipelined and decomposed. Made per call
// from the planner's kernel config and the communicator's two cuBLAS lanes.
#pragma once

#include <cstdint>

#include "async_input_gemm.hpp"
#include "cuda/cublas_gemm.hpp"
#include "gpu/gemm_paths.hpp"

namespace asynctp::cuda {

// A communicator's cuBLAS handles, one per pipelined lane (lane 0 also runs
// decomposed). Made on first use; a graph capture needs them made already.
struct CublasLanes {
  CublasGemm lane[2];
  bool ready(bool both) const { return lane[0].ready() && (!both || lane[1].ready()); }
};

class CudaGemmPaths final : public gpu::GemmPaths {
 public:
  // `config`: the native kernel the planner chose (nullptr unless native).
  CudaGemmPaths(const native::NativeGemmConfig* config, CublasLanes& cublas)
      : config_(config), cublas_(cublas) {}

  void launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                     const std::uint32_t* flags) override;
  void enqueue_pipelined(const gpu::CallSpec& call, gpu::RankResources& res) override;
  void enqueue_decomposed(const gpu::CallSpec& call, gpu::RankResources& res) override;

 private:
  const native::NativeGemmConfig* config_;
  CublasLanes& cublas_;
};

}  // namespace asynctp::cuda
