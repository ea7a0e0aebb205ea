// Checking results as asynctp's own tests and `asynctp run --check` do:
// seeded random inputs, outputs poisoned before a call so that an element it
// never wrote shows, and every rank's C compared with a float64 reference by
// relative Frobenius error, against a bound derived from the output dtype.
// Host tensors only: copy device outputs back first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"

namespace asynctp::verify {

// A stream of N(0, 1) draws. Pairs (seed, stream) that differ in either give
// unrelated streams, so rank r of a run seeded s draws from Random(s, r) and
// the same seed always gives the same inputs.
class Random {
 public:
  Random(std::uint64_t seed, std::uint64_t stream);
  // Fills a dense (row- or column-major) host tensor with the next draws in
  // memory order, each rounded to nearest even in the tensor's dtype.
  // Throws Error(invalid_argument) for a view with gaps between elements.
  void fill_normal(const TensorView& host);

 private:
  std::mt19937_64 engine_;
};

// Fills a host tensor with a NaN bit pattern that no computation produces
// from finite inputs.
void poison(const TensorView& host) noexcept;

// What fused_all_gather_matmul's C is on the rank holding `b`, in float64:
// the shards stacked in rank order, times `b` ((sum of shard rows) x b.cols,
// row-major). Inputs are read exactly: every storage dtype widens to double.
std::vector<double> reference_all_gather_matmul(const std::vector<TensorView>& a_shards,
                                                const TensorView& b);

// The relative Frobenius error an output stored as `dtype` may have with fp32
// accumulation: about one ulp of the output, whose rounding dominates.
double tolerance(DType dtype) noexcept;

struct Verdict {
  bool ok = true;
  // ||C - reference||_F / ||reference||_F; infinite when C has an element
  // that is not finite.
  double relative_error = 0;
  double tolerance = 0;
  // Empty when ok; else every fault, e.g. "12 C elements never written, C
  // rel. error 0.1 > 0.004".
  std::string failure;
};

// One rank's host copies of fused_all_gather_matmul's outputs against its
// reference: every element of C written, finite and within tolerance(C's
// dtype); the gathered A, when given, equal bit for bit to the shards stacked
// in rank order.
Verdict check_all_gather_matmul(const TensorView& c, const TensorView* a_gathered,
                                const std::vector<TensorView>& a_shards,
                                const std::vector<double>& reference);

// ---- One fused_all_gather_matmul problem across W ranks, whole.

struct AllGatherMatmulShape {
  int world_size = 1;
  std::int64_t m = 0;  // rows of each rank's A shard; C and the gathered A have W * m
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::bf16;
  bool b_col_major = false;
};

// Every rank's host tensors: its A shard and its own B (in a column-parallel
// layer each rank holds another slice of the weight), drawn with
// Random(seed, rank), A shard first, and the outputs it receives. Each
// rank's memory is first touched by the thread that fills it; the host work
// (filling, references, checks) runs on at most the machine's hardware
// threads, so that many ranks do not mean as many float64 GEMMs in memory.
class AllGatherMatmulProblem {
 public:
  // One rank's arguments of fused_all_gather_matmul.
  struct Rank {
    TensorView a_shard;     // m x k, row-major
    TensorView b;           // k x n, row- or column-major
    TensorView c;           // (W*m) x n, row-major
    TensorView a_gathered;  // (W*m) x k, row-major
  };

  // Throws std::bad_alloc when the memory is not there.
  AllGatherMatmulProblem(const AllGatherMatmulShape& shape, std::uint64_t seed);
  ~AllGatherMatmulProblem();
  AllGatherMatmulProblem(const AllGatherMatmulProblem&) = delete;
  AllGatherMatmulProblem& operator=(const AllGatherMatmulProblem&) = delete;

  // The host memory a problem of `shape` takes, with its references and what
  // computing them needs at once: to refuse one that cannot fit up front.
  static std::uint64_t host_bytes(const AllGatherMatmulShape& shape, bool with_references);

  const AllGatherMatmulShape& shape() const noexcept;
  const Rank& rank(int r) const;

  // The reference of every rank `wanted` accepts (default: all), computed
  // once, for check(): at full size each is a long float64 GEMM.
  void compute_references(const std::function<bool(int rank)>& wanted = {});
  // Rank r's reference; empty when not computed.
  const std::vector<double>& reference(int r) const;
  void poison_outputs();
  // check_all_gather_matmul of every rank that has a reference (the others
  // are ok): one verdict per rank.
  std::vector<Verdict> check() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace asynctp::verify
