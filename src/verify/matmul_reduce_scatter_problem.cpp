// The op's verify problem: its tensors, references and checks. Its call and
// plan are the op's entry points on a rank's tensors (src/api/ops.cpp).
#include "asynctp/verify.hpp"

namespace asynctp::verify {

MatmulReduceScatterProblem::MatmulReduceScatterProblem(const MatmulReduceScatterShape& shape,
                                                       std::uint64_t seed)
    : ProblemOf(shape) {
  add_ranks(seed, [&] {
    const Rank rank{allocate(shape.world_size * shape.m, shape.k),
                    allocate(shape.k, shape.n, shape.b_col_major), allocate(shape.m, shape.n)};
    return std::pair{rank, RankTensors{{{"A", rank.a}, {"B", rank.b}}, {{"out", rank.out}}}};
  });
}

// A float64 out per rank is kept; building one also needs float64 copies of
// the rank's rows of one A and of one B at a time.
std::uint64_t MatmulReduceScatterProblem::host_bytes(const MatmulReduceScatterShape& shape,
                                                     bool with_references) {
  const std::int64_t rows = shape.world_size * shape.m;
  return host_bytes_of(shape, with_references,
                       rows * shape.k + shape.k * shape.n + shape.m * shape.n, shape.m * shape.n,
                       shape.m * shape.k + shape.k * shape.n);
}

// Rank 0's partial product, all M rows.
std::vector<TensorView> MatmulReduceScatterProblem::gemm_a_blocks() const { return {rank(0).a}; }

std::vector<double> MatmulReduceScatterProblem::compute_reference(int rank) const {
  std::vector<TensorView> a, b;
  for (const Rank& r : ranks_) {
    a.push_back(r.a);
    b.push_back(r.b);
  }
  return reference_matmul_reduce_scatter(a, b, rank);
}

Verdict MatmulReduceScatterProblem::check_rank(int rank,
                                               const std::vector<double>& reference) const {
  return check_matmul_reduce_scatter(this->rank(rank).out, reference, shape().world_size);
}

}  // namespace asynctp::verify
