// A runtime's library GEMM (cuBLAS, hipBLAS): the GEMM of the pipelined and
// decomposed paths, on row-major operands with fp32 accumulation.
#pragma once

#include <cstdint>

#include "asynctp/tensor.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

class LibraryGemm {
 public:
  LibraryGemm() = default;
  virtual ~LibraryGemm() = default;
  LibraryGemm(const LibraryGemm&) = delete;
  LibraryGemm& operator=(const LibraryGemm&) = delete;

  // c (rows x b.cols, row-major, ld = b.cols) = a (rows x b.rows, row-major,
  // ld = b.rows) @ b (row- or column-major), enqueued on `stream`. The
  // library's handle is made on first use, on the current device.
  virtual void run(rt::StreamHandle stream, const void* a, std::int64_t rows, const TensorView& b,
                   void* c) = 0;
  // Whether the handle exists: making one is not allowed inside a graph
  // capture.
  virtual bool ready() const noexcept = 0;
  // Makes the handle (and its workspace) now, if it does not exist yet:
  // allocation can wait for the whole device, so a transport whose ranks
  // share a device prepares before any rank enqueues work a peer may wait on.
  virtual void prepare() = 0;
};

// A library GEMM over one handle of the library (cublasHandle_t,
// hipblasHandle_t), made on first use: a graph capture cannot make one.
template <typename Handle>
class HandleGemm : public LibraryGemm {
 public:
  bool ready() const noexcept final { return handle_ != nullptr; }

 protected:
  Handle handle_ = nullptr;
};

// The row-major C (rows x n) = A (rows x k) @ B as a column-major BLAS
// computes it: C^T (n x rows) = B^T (n x k) @ A^T (k x rows). A row-major B
// is B^T column-major (ld n, no transpose); a column-major B needs op T
// (ld k). A's and C's leading dimensions are k and n.
struct ColumnMajorGemm {
  int n = 0, rows = 0, k = 0;
  bool transpose_b = false;
  int ldb = 0;
};

inline ColumnMajorGemm column_major_gemm(std::int64_t rows, const TensorView& b) {
  ColumnMajorGemm g;
  g.n = static_cast<int>(b.cols);
  g.rows = static_cast<int>(rows);
  g.k = static_cast<int>(b.rows);
  g.transpose_b = !b.is_row_major();
  g.ldb = g.transpose_b ? g.k : g.n;
  return g;
}

}  // namespace asynctp::gpu
