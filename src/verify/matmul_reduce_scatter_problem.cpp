// The op's verify problem: its tensors, references and checks. Its call and
// plan are the op's entry points on a rank's tensors (src/call/collective.cpp).
#include "asynctp/verify.hpp"
#include "verify/check_within_bound.hpp"

namespace asynctp::verify {

MatmulReduceScatterProblem::MatmulReduceScatterProblem(const MatmulReduceScatterShape& shape,
                                                       std::uint64_t seed)
    : ProblemOf(shape), bounds_(static_cast<std::size_t>(shape.world_size)) {
  add_ranks(seed, [&] {
    const Rank rank{allocate(shape.world_size * shape.m, shape.k),
                    allocate(shape.k, shape.n, shape.b_col_major), allocate(shape.m, shape.n)};
    return std::pair{rank, RankTensors{{{"A", rank.a}, {"B", rank.b}}, {{"out", rank.out}}}};
  });
}

// A float64 out and its error bound per rank are kept; building them also
// needs float64 copies of the rank's rows of one A and of one B at a time,
// a product and the bound's two terms.
std::uint64_t MatmulReduceScatterProblem::host_bytes(const MatmulReduceScatterShape& shape,
                                                     bool with_references) {
  const std::int64_t rows = shape.world_size * shape.m;
  return host_bytes_of(shape, with_references,
                       rows * shape.k + shape.k * shape.n + shape.m * shape.n, 2 * shape.m * shape.n,
                       shape.m * shape.k + shape.k * shape.n + 3 * shape.m * shape.n);
}

// Rank 0's partial product, all M rows.
std::vector<TensorView> MatmulReduceScatterProblem::gemm_a_blocks() const { return {rank(0).a}; }

std::vector<double> MatmulReduceScatterProblem::compute_reference(int rank) const {
  std::vector<TensorView> a, b;
  for (const Rank& r : ranks_) {
    a.push_back(r.a);
    b.push_back(r.b);
  }
  ReduceScatterReference reference = reference_matmul_reduce_scatter(a, b, rank);
  bounds_[static_cast<std::size_t>(rank)] =
      reduce_scatter_error_bound(reference, shape().dtype, shape().partial_sum);
  return std::move(reference.value);
}

Verdict MatmulReduceScatterProblem::check_rank(int rank,
                                               const std::vector<double>& reference) const {
  return check_within_bound(this->rank(rank).out, reference,
                            bounds_[static_cast<std::size_t>(rank)]);
}

}  // namespace asynctp::verify
