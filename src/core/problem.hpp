// A collective GEMM problem as one rank sees it, after validation.
//
// Both ops cut the rows of one rank's GEMM into world_size chunks of m rows,
// chunk c belonging to rank c, and every rank's GEMM is (W*m) x n x k:
//   all-gather + matmul: chunk c is rank c's A shard; every rank gathers all
//     chunks and computes C = gathered A @ B (k = the full K, equal on every
//     rank).
//   matmul + reduce-scatter: every rank computes its partial product
//     A_r @ B_r over all M = W*m rows (k = this rank's K-slice, which may
//     differ between ranks); chunk c of every partial goes to rank c, which
//     sums the W partials of its m rows.
#pragma once

#include <cstdint>
#include <string>

#include "asynctp/tensor.hpp"

namespace asynctp::core {

enum class Layout { row_major, col_major };

const char* to_string(Layout layout) noexcept;

// The collective GEMMs asynctp runs.
enum class OpKind {
  all_gather_matmul,      // C = allgather(A shards) @ B
  matmul_reduce_scatter,  // out_r = rows r of sum over s of A_s @ B_s
};

// The public function's name, e.g. "fused_all_gather_matmul".
const char* op_name(OpKind op) noexcept;

struct ProblemDesc {
  OpKind op = OpKind::all_gather_matmul;
  int world_size = 1;
  int rank = 0;
  // Rows of one chunk: one rank's A shard (all-gather) or one rank's share
  // of the output, M / world_size (reduce-scatter).
  std::int64_t m = 0;
  std::int64_t n = 0;  // columns of B and of the output
  std::int64_t k = 0;  // this rank's inner dimension (see above)
  DType dtype = DType::bf16;
  Layout b_layout = Layout::row_major;
  bool gathered_out = false;  // all-gather only: the gathered A is returned

  // Rows of every rank's GEMM, world_size * m: the gathered A's
  // (all-gather) or A's own, M (reduce-scatter).
  std::int64_t gathered_rows() const noexcept { return m * world_size; }
  // Multiply-adds times two, for one rank's GEMM.
  double flops() const noexcept { return 2.0 * static_cast<double>(gathered_rows()) * n * k; }
  std::string to_string() const;
};

}  // namespace asynctp::core
