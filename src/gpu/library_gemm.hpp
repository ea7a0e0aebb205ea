// A runtime's library GEMM (cuBLAS, hipBLAS): the GEMM of the pipelined and
// decomposed paths, on row-major operands with fp32 accumulation.
#pragma once

#include <cstdint>

#include "asynctp/tensor.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

class LibraryGemm {
 public:
  virtual ~LibraryGemm() = default;

  // c (rows x b.cols, row-major, ld = b.cols) = a (rows x b.rows, row-major,
  // ld = b.rows) @ b (row- or column-major), enqueued on `stream`. The
  // library's handle is made on first use, on the current device.
  virtual void run(rt::StreamHandle stream, const void* a, std::int64_t rows, const TensorView& b,
                   void* c) = 0;
  // Whether the handle exists: making one is not allowed inside a graph
  // capture.
  virtual bool ready() const noexcept = 0;
};

}  // namespace asynctp::gpu
