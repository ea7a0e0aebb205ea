// A collective GEMM problem as one rank sees it, after validation.
#pragma once

#include <cstdint>
#include <string>

#include "asynctp/tensor.hpp"

namespace asynctp::core {

enum class Layout { row_major, col_major };

const char* to_string(Layout layout) noexcept;

// The collective GEMMs asynctp runs.
enum class OpKind {
  all_gather_matmul,  // C = allgather(A shards) @ B
};

// The public function's name, e.g. "fused_all_gather_matmul".
const char* op_name(OpKind op) noexcept;

struct ProblemDesc {
  OpKind op = OpKind::all_gather_matmul;
  int world_size = 1;
  int rank = 0;
  std::int64_t m = 0;  // rows of one rank's shard; the gathered A has world_size * m rows
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::bf16;
  Layout b_layout = Layout::row_major;
  bool gathered_out = false;

  std::int64_t gathered_rows() const noexcept { return m * world_size; }
  // Multiply-adds times two, for one rank's GEMM.
  double flops() const noexcept { return 2.0 * static_cast<double>(gathered_rows()) * n * k; }
  std::string to_string() const;
};

}  // namespace asynctp::core
