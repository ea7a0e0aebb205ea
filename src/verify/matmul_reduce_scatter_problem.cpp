#include "asynctp/ops.hpp"
#include "asynctp/verify.hpp"

namespace asynctp::verify {

MatmulReduceScatterProblem::MatmulReduceScatterProblem(const MatmulReduceScatterShape& shape,
                                                       std::uint64_t seed)
    : Problem(shape) {
  const std::int64_t rows = shape.world_size * shape.m;
  for (int r = 0; r < shape.world_size; ++r) {
    const Rank& rank = ranks_.emplace_back(Rank{allocate(rows, shape.k),
                                                allocate(shape.k, shape.n, shape.b_col_major),
                                                allocate(shape.m, shape.n)});
    add_rank({{{"A", rank.a}, {"B", rank.b}}, {{"out", rank.out}}});
  }
  fill_inputs(seed);
}

std::uint64_t MatmulReduceScatterProblem::host_bytes(const MatmulReduceScatterShape& shape,
                                                     bool with_references) {
  const std::int64_t rows = shape.world_size * shape.m;
  const auto world = static_cast<std::uint64_t>(shape.world_size);
  std::uint64_t total =
      world * (bytes_of(rows, shape.k, shape.dtype) + bytes_of(shape.k, shape.n, shape.dtype) +
               bytes_of(shape.m, shape.n, shape.dtype));
  if (with_references) {
    // One float64 out per rank is kept; building one also needs a float64
    // copy of the rank's rows of one A and of one B at a time, on each host
    // thread at once.
    const auto concurrent = static_cast<std::uint64_t>(host_threads(shape.world_size));
    total +=
        world * bytes_of(shape.m, shape.n, DType::fp32) * 2 +
        concurrent *
            (bytes_of(shape.m, shape.k, DType::fp32) + bytes_of(shape.k, shape.n, DType::fp32)) * 2;
  }
  return total;
}

const MatmulReduceScatterProblem::Rank& MatmulReduceScatterProblem::rank(int r) const {
  return ranks_.at(static_cast<std::size_t>(r));
}

RunInfo MatmulReduceScatterProblem::call(Comm& comm, const RankTensors& on,
                                         const Options& options) const {
  return fused_matmul_reduce_scatter(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                     on.outputs.at(0).view, options);
}

RunInfo MatmulReduceScatterProblem::plan(const Comm& comm, const RankTensors& on,
                                         const Options& options) const {
  return plan_fused_matmul_reduce_scatter(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                          on.outputs.at(0).view, options);
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
