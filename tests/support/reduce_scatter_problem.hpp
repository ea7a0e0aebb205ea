// One fused matmul + reduce-scatter problem across W ranks, for CPU backend
// tests: per rank a random A (M x k_r, M = W*m) and B (k_r x n, row- or
// column-major), where the K-slices k_r may differ between ranks; outputs
// (m x n) poisoned before every run; and the checks the project requires:
// every element written and within its rigorous error bound against the
// float64 reference (verify::check_matmul_reduce_scatter).
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

struct RsShape {
  int world = 1;
  std::int64_t m = 16;  // rows each rank receives; A has world * m rows
  std::int64_t n = 16;
  std::vector<std::int64_t> k;  // the K-slice of each rank (size world)
  asynctp::DType dtype = asynctp::DType::bf16;
  bool b_col_major = false;

  std::int64_t rows() const { return world * m; }
  std::int64_t k_of(int r) const { return k[static_cast<std::size_t>(r)]; }
  std::string to_string() const {
    std::ostringstream s;
    s << "W=" << world << " M=" << rows() << " (m=" << m << ") n=" << n << " k=[";
    for (std::size_t r = 0; r < k.size(); ++r) s << (r ? "," : "") << k[r];
    s << "] " << asynctp::to_string(dtype) << " b=" << (b_col_major ? "col" : "row");
    return s.str();
  }
};

// Every rank with the same K-slice.
inline RsShape rs_shape(int world, std::int64_t m, std::int64_t n, std::int64_t k,
                        asynctp::DType dtype = asynctp::DType::bf16, bool b_col_major = false) {
  RsShape s;
  s.world = world;
  s.m = m;
  s.n = n;
  s.k.assign(static_cast<std::size_t>(world), k);
  s.dtype = dtype;
  s.b_col_major = b_col_major;
  return s;
}

class ReduceScatterProblem {
 public:
  ReduceScatterProblem(const RsShape& shape, std::mt19937_64& rng) : shape_(shape) {
    for (int r = 0; r < shape.world; ++r) {
      a_.emplace_back(shape.dtype, shape.rows(), shape.k_of(r));
      b_.emplace_back(shape.dtype, shape.k_of(r), shape.n, shape.b_col_major);
      out_.emplace_back(shape.dtype, shape.m, shape.n);
    }
    refill(rng);
  }

  const RsShape& shape() const { return shape_; }
  int world() const { return shape_.world; }

  // Fresh inputs; the references are recomputed lazily.
  void refill(std::mt19937_64& rng) {
    for (auto& t : a_) t.fill_normal(rng);
    for (auto& t : b_) t.fill_normal(rng);
    reference_.assign(static_cast<std::size_t>(shape_.world), {});
  }

  asynctp::TensorView a(int r) const { return a_[idx(r)].view(); }
  asynctp::TensorView b(int r) const { return b_[idx(r)].view(); }
  asynctp::TensorView out(int r) const { return out_[idx(r)].view(); }
  HostTensor& a_tensor(int r) { return a_[idx(r)]; }
  HostTensor& b_tensor(int r) { return b_[idx(r)]; }
  HostTensor& out_tensor(int r) { return out_[idx(r)]; }

  asynctp::RunInfo call(asynctp::Comm& comm, const asynctp::Options& options) const {
    const int r = comm.rank();
    return asynctp::fused_matmul_reduce_scatter(comm, a(r), b(r), out(r), options);
  }

  void poison_outputs() {
    for (int r = 0; r < shape_.world; ++r) asynctp::verify::poison(out(r));
  }

  // Rank r's float64 out with its error bound's terms.
  const asynctp::verify::ReduceScatterReference& reference(int r) {
    auto& ref = reference_[idx(r)];
    if (ref.value.empty()) {
      std::vector<asynctp::TensorView> as, bs;
      for (int s = 0; s < shape_.world; ++s) {
        as.push_back(a(s));
        bs.push_back(b(s));
      }
      ref = asynctp::verify::reference_matmul_reduce_scatter(as, bs, r);
    }
    return ref;
  }

  // How the runs checked sum their partials: the bound allows for it.
  void set_partial_sum(asynctp::verify::PartialSum sum) { partial_sum_ = sum; }

  // Rank r's out of the last run (host memory) against its bound.
  asynctp::verify::Verdict verdict(int r) { return verdict_of(out(r), r); }
  asynctp::verify::Verdict verdict_of(const asynctp::TensorView& got, int r) {
    return asynctp::verify::check_matmul_reduce_scatter(got, reference(r), partial_sum_);
  }

  // gtest assertions on rank r's output of the last run.
  void expect_correct(int r) {
    SCOPED_TRACE("rank " + std::to_string(r) + " of " + shape_.to_string());
    const asynctp::verify::Verdict v = verdict(r);
    EXPECT_TRUE(v.ok) << v.failure;
  }
  void expect_all_correct() {
    for (int r = 0; r < shape_.world; ++r) expect_correct(r);
  }

 private:
  std::size_t idx(int r) const { return static_cast<std::size_t>(r); }
  RsShape shape_;
  std::vector<HostTensor> a_, b_, out_;
  std::vector<asynctp::verify::ReduceScatterReference> reference_;
  asynctp::verify::PartialSum partial_sum_ = asynctp::verify::PartialSum::fp32;
};

}  // namespace asynctp_test
