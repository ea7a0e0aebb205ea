#include "core/validate.hpp"

#include <cstdint>
#include <sstream>
#include <string>

#include "asynctp/error.hpp"
#include "core/lookup.hpp"

namespace asynctp::core {
namespace {

[[noreturn]] void fail(const std::string& argument, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, argument + ": " + rule);
}

std::string shape_of(const TensorView& t) {
  std::ostringstream s;
  s << t.rows << "x" << t.cols << " " << to_string(t.dtype) << " strides (" << t.row_stride << ", "
    << t.col_stride << ")";
  return s.str();
}

void check_common(const std::string& name, const TensorView& t, DeviceKind device_kind) {
  if (t.data == nullptr) fail(name, "data pointer must not be null");
  // A DType is any int to the compiler (a cast, a C caller): one the library
  // does not know would be read and written with the wrong element size.
  if (t.dtype != DType::bf16 && t.dtype != DType::fp16 && t.dtype != DType::fp32) {
    fail(name, "dtype must be bf16, fp16 or fp32, got the value " +
                   std::to_string(static_cast<int>(t.dtype)));
  }
  if (t.rows <= 0 || t.cols <= 0) {
    fail(name, "shape must be positive in both dimensions, got " + shape_of(t));
  }
  std::int64_t count = 0;
  if (!checked_element_count(t.rows, t.cols, &count) || count > kMaxElementsPerTensor) {
    fail(name, "must have fewer than 2^31 elements (32-bit indexing), got " +
                   std::to_string(t.rows) + "x" + std::to_string(t.cols));
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % kRequiredAlignmentBytes != 0) {
    fail(name, "data pointer must be 16-byte aligned");
  }
  if (t.device.kind != device_kind) {
    fail(name, std::string("must live on the communicator's device kind (") +
                   to_string(device_kind) + "), got " + to_string(t.device.kind));
  }
}

void check_row_major(const std::string& name, const TensorView& t) {
  if (!t.is_row_major()) {
    fail(name,
         "must be contiguous row-major (col_stride 1, row_stride = cols), got " + shape_of(t));
  }
}

std::uintptr_t end_address(const TensorView& t) {
  return reinterpret_cast<std::uintptr_t>(t.data) +
         static_cast<std::uintptr_t>(t.numel()) * element_size(t.dtype);
}

bool overlaps(const TensorView& x, const TensorView& y) {
  const auto x0 = reinterpret_cast<std::uintptr_t>(x.data);
  const auto y0 = reinterpret_cast<std::uintptr_t>(y.data);
  return x0 < end_address(y) && y0 < end_address(x);
}

void check_no_overlap(const std::string& out_name, const TensorView& out,
                      const std::string& in_name, const TensorView& in) {
  if (overlaps(out, in)) fail(out_name, "must not overlap " + in_name);
}

void check_comm(int world_size, int rank) {
  if (world_size < 1) fail("comm", "world size must be at least 1");
  if (rank < 0 || rank >= world_size) fail("comm", "rank must lie in [0, world size)");
}

// B is k x n in either dense layout; returns its layout.
Layout check_b_layout(const std::string& name, const TensorView& b) {
  if (b.is_row_major()) return Layout::row_major;
  if (b.is_col_major()) return Layout::col_major;
  fail(name, "must be contiguous row-major or column-major, got " + shape_of(b));
}

// B's rows are A's columns; `k_label` says which k that is.
void check_inner_dimension(const TensorView& b, const std::string& a_name,
                           const std::string& k_label, std::int64_t k) {
  if (b.rows != k) {
    fail("b", "rows must equal " + a_name + "'s columns (" + k_label + " = " + std::to_string(k) +
                  "), got " + std::to_string(b.rows));
  }
}

// An output's exact shape, `rule` naming it in the problem's terms.
void check_shape(const std::string& name, const TensorView& t, const std::string& rule,
                 std::int64_t rows, std::int64_t cols) {
  if (t.rows != rows || t.cols != cols) {
    fail(name, "shape must be " + rule + " = " + std::to_string(rows) + "x" + std::to_string(cols) +
                   ", got " + std::to_string(t.rows) + "x" + std::to_string(t.cols));
  }
}

ProblemDesc describe(OpKind op, int world_size, int rank, std::int64_t m, std::int64_t n,
                     std::int64_t k, DType dtype, Layout b_layout) {
  ProblemDesc problem;
  problem.op = op;
  problem.world_size = world_size;
  problem.rank = rank;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.dtype = dtype;
  problem.b_layout = b_layout;
  return problem;
}

void check_same_dtype(const std::string& name, const TensorView& t, const std::string& first_name,
                      const TensorView& first) {
  if (t.dtype != first.dtype) {
    fail(name, "dtype must equal " + first_name + "'s (" + to_string(first.dtype) + "), got " +
                   to_string(t.dtype));
  }
}

}  // namespace

const char* to_string(Layout layout) noexcept {
  return layout == Layout::row_major ? "row" : "col";
}

const char* op_name(OpKind op) noexcept {
  constexpr Entry<OpKind, const char*> kNames[] = {
      {OpKind::all_gather_matmul, "fused_all_gather_matmul"},
      {OpKind::matmul_reduce_scatter, "fused_matmul_reduce_scatter"}};
  return lookup(kNames, op, "?");
}

std::string ProblemDesc::to_string() const {
  std::ostringstream s;
  if (op == OpKind::matmul_reduce_scatter) {
    s << "reduce-scatter W=" << world_size << " M=" << gathered_rows() << " (m=" << m
      << " per rank) n=" << n << " k=" << k << " (this rank's slice)";
  } else {
    s << "W=" << world_size << " m=" << m << " (M=" << gathered_rows() << ") n=" << n << " k=" << k;
  }
  s << " " << asynctp::to_string(dtype) << " b=" << core::to_string(b_layout);
  return s.str();
}

bool checked_element_count(std::int64_t rows, std::int64_t cols, std::int64_t* count) noexcept {
  if (rows < 0 || cols < 0) return false;
  return !__builtin_mul_overflow(rows, cols, count);
}

ProblemDesc validate_fused_all_gather_matmul(int world_size, int rank, DeviceKind device_kind,
                                             const TensorView& a_shard, const TensorView& b,
                                             const TensorView& c_out,
                                             const TensorView* a_gathered_out) {
  check_comm(world_size, rank);

  check_common("a_shard", a_shard, device_kind);
  check_common("b", b, device_kind);
  check_common("c_out", c_out, device_kind);
  if (a_gathered_out != nullptr) check_common("a_gathered_out", *a_gathered_out, device_kind);

  check_row_major("a_shard", a_shard);
  check_row_major("c_out", c_out);
  if (a_gathered_out != nullptr) check_row_major("a_gathered_out", *a_gathered_out);
  const Layout b_layout = check_b_layout("b", b);

  check_same_dtype("b", b, "a_shard", a_shard);
  check_same_dtype("c_out", c_out, "a_shard", a_shard);
  if (a_gathered_out != nullptr) {
    check_same_dtype("a_gathered_out", *a_gathered_out, "a_shard", a_shard);
  }

  const std::int64_t m = a_shard.rows;
  const std::int64_t k = a_shard.cols;
  const std::int64_t n = b.cols;
  std::int64_t gathered_rows = 0;
  if (__builtin_mul_overflow(m, static_cast<std::int64_t>(world_size), &gathered_rows)) {
    fail("a_shard", "rows times world size overflows");
  }
  check_inner_dimension(b, "a_shard", "k", k);
  check_shape("c_out", c_out, "(world_size * m) x n", gathered_rows, n);
  if (a_gathered_out != nullptr) {
    check_shape("a_gathered_out", *a_gathered_out, "(world_size * m) x k", gathered_rows, k);
  }

  check_no_overlap("c_out", c_out, "a_shard", a_shard);
  check_no_overlap("c_out", c_out, "b", b);
  if (a_gathered_out != nullptr) {
    check_no_overlap("a_gathered_out", *a_gathered_out, "a_shard", a_shard);
    check_no_overlap("a_gathered_out", *a_gathered_out, "b", b);
    check_no_overlap("a_gathered_out", *a_gathered_out, "c_out", c_out);
  }

  ProblemDesc problem =
      describe(OpKind::all_gather_matmul, world_size, rank, m, n, k, a_shard.dtype, b_layout);
  problem.gathered_out = a_gathered_out != nullptr;
  return problem;
}

ProblemDesc validate_fused_matmul_reduce_scatter(int world_size, int rank, DeviceKind device_kind,
                                                 const TensorView& a, const TensorView& b,
                                                 const TensorView& out) {
  check_comm(world_size, rank);

  check_common("a", a, device_kind);
  check_common("b", b, device_kind);
  check_common("out", out, device_kind);

  check_row_major("a", a);
  check_row_major("out", out);
  const Layout b_layout = check_b_layout("b", b);

  check_same_dtype("b", b, "a", a);
  check_same_dtype("out", out, "a", a);

  const std::int64_t rows = a.rows;  // M: every rank holds all rows
  const std::int64_t k = a.cols;     // this rank's K-slice
  const std::int64_t n = b.cols;
  if (rows % world_size != 0) {
    fail("a", "rows (M = " + std::to_string(rows) + ") must be divisible by the world size (" +
                  std::to_string(world_size) + "): each rank receives M / world_size rows");
  }
  const std::int64_t m = rows / world_size;
  check_inner_dimension(b, "a", "this rank's k", k);
  check_shape("out", out, "(M / world_size) x n", m, n);

  check_no_overlap("out", out, "a", a);
  check_no_overlap("out", out, "b", b);

  return describe(OpKind::matmul_reduce_scatter, world_size, rank, m, n, k, a.dtype, b_layout);
}

ProblemDesc validate_op(const OpCall& call, int world_size, int rank, DeviceKind device_kind) {
  switch (call.op) {
    case OpKind::matmul_reduce_scatter:
      return validate_fused_matmul_reduce_scatter(world_size, rank, device_kind, call.a, call.b,
                                                  call.out);
    case OpKind::all_gather_matmul:
      break;
  }
  return validate_fused_all_gather_matmul(world_size, rank, device_kind, call.a, call.b, call.out,
                                          call.a_gathered_out);
}

std::vector<std::pair<const char*, TensorView>> named_tensors(const OpCall& call) {
  if (call.op == OpKind::matmul_reduce_scatter) {
    return {{"a", call.a}, {"b", call.b}, {"out", call.out}};
  }
  std::vector<std::pair<const char*, TensorView>> out = {
      {"a_shard", call.a}, {"b", call.b}, {"c_out", call.out}};
  if (call.a_gathered_out) out.emplace_back("a_gathered_out", *call.a_gathered_out);
  return out;
}

}  // namespace asynctp::core
