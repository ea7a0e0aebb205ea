// One fused all-gather + matmul problem across W ranks, for CPU backend tests:
// per rank a random A shard (m x k) and its own random B (k x n, row- or
// column-major, as in column-parallel layers where each rank holds a different
// slice of the weight), outputs poisoned before every run, and the checks the
// project requires: every element written, relative Frobenius error against
// the float64 reference within verify::tolerance, gathered A bitwise equal
// to the concatenated shards (asynctp/verify.hpp's check).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "asynctp/verify.hpp"
#include "core/reference.hpp"
#include "support/host_tensor.hpp"

namespace asynctp_test {

struct Shape {
  int world = 1;
  std::int64_t m = 16, n = 16, k = 16;
  asynctp::DType dtype = asynctp::DType::bf16;
  bool b_col_major = false;
  bool gathered = true;  // pass a_gathered_out (else nullptr)

  std::string to_string() const {
    std::ostringstream s;
    s << "W=" << world << " m=" << m << " n=" << n << " k=" << k << " " << asynctp::to_string(dtype)
      << " b=" << (b_col_major ? "col" : "row") << (gathered ? " gathered" : " no-gathered");
    return s.str();
  }
};

// A shape with the gathered output on, for tests that list many shapes.
inline Shape make_shape(int world, std::int64_t m, std::int64_t n, std::int64_t k,
                        asynctp::DType dtype = asynctp::DType::bf16, bool b_col_major = false) {
  Shape s;
  s.world = world;
  s.m = m;
  s.n = n;
  s.k = k;
  s.dtype = dtype;
  s.b_col_major = b_col_major;
  return s;
}

class FusedProblem {
 public:
  FusedProblem(const Shape& shape, std::mt19937_64& rng) : shape_(shape) {
    using asynctp::DType;
    for (int r = 0; r < shape.world; ++r) {
      a_.emplace_back(shape.dtype, shape.m, shape.k);
      b_.emplace_back(shape.dtype, shape.k, shape.n, shape.b_col_major);
      c_.emplace_back(shape.dtype, shape.world * shape.m, shape.n);
      g_.emplace_back(shape.dtype, shape.world * shape.m, shape.k);
    }
    refill(rng);
  }

  const Shape& shape() const { return shape_; }
  int world() const { return shape_.world; }

  // Fresh inputs; the references are recomputed lazily.
  void refill(std::mt19937_64& rng) {
    for (auto& t : a_) t.fill_normal(rng);
    for (auto& t : b_) t.fill_normal(rng);
    reference_.assign(static_cast<std::size_t>(shape_.world), {});
  }

  asynctp::TensorView a(int r) const { return a_[idx(r)].view(); }
  asynctp::TensorView b(int r) const { return b_[idx(r)].view(); }
  asynctp::TensorView c(int r) const { return c_[idx(r)].view(); }
  asynctp::TensorView g(int r) const { return g_[idx(r)].view(); }
  HostTensor& a_tensor(int r) { return a_[idx(r)]; }
  HostTensor& b_tensor(int r) { return b_[idx(r)]; }
  HostTensor& c_tensor(int r) { return c_[idx(r)]; }
  HostTensor& g_tensor(int r) { return g_[idx(r)]; }

  // The call every rank makes: this problem's views, gathered or not.
  asynctp::RunInfo call(asynctp::Comm& comm, const asynctp::Options& options) const {
    const int r = comm.rank();
    const asynctp::TensorView gathered = g(r);
    return asynctp::fused_all_gather_matmul(comm, a(r), b(r), c(r),
                                            shape_.gathered ? &gathered : nullptr, options);
  }

  void poison_outputs() {
    for (int r = 0; r < shape_.world; ++r) {
      asynctp::verify::poison(c(r));
      asynctp::verify::poison(g(r));
    }
  }

  const std::vector<double>& reference(int r) {
    auto& ref = reference_[idx(r)];
    if (ref.empty()) {
      std::vector<asynctp::TensorView> shards;
      for (int s = 0; s < shape_.world; ++s) shards.push_back(a(s));
      ref = asynctp::verify::reference_all_gather_matmul(shards, b(r));
    }
    return ref;
  }

  // gtest assertions on rank r's outputs of the last run: the public check
  // (asynctp/verify.hpp), and with no gathered output asked for, its buffer
  // left poisoned.
  void expect_correct(int r) {
    SCOPED_TRACE("rank " + std::to_string(r) + " of " + shape_.to_string());
    std::vector<asynctp::TensorView> shards;
    for (int s = 0; s < shape_.world; ++s) shards.push_back(a(s));
    const asynctp::TensorView gathered = g(r);
    const asynctp::verify::Verdict verdict = asynctp::verify::check_all_gather_matmul(
        c(r), shape_.gathered ? &gathered : nullptr, shards, reference(r));
    EXPECT_TRUE(verdict.ok) << verdict.failure;
    if (!shape_.gathered) {
      const auto untouched = asynctp::core::compare_to_reference(
          g(r), std::vector<double>(static_cast<std::size_t>(g(r).numel()), 0.0));
      EXPECT_EQ(untouched.unwritten, g(r).numel()) << "a_gathered_out was null, yet written";
    }
  }
  void expect_all_correct() {
    for (int r = 0; r < shape_.world; ++r) expect_correct(r);
  }

 private:
  std::size_t idx(int r) const { return static_cast<std::size_t>(r); }
  Shape shape_;
  std::vector<HostTensor> a_, b_, c_, g_;
  std::vector<std::vector<double>> reference_;
};

}  // namespace asynctp_test
