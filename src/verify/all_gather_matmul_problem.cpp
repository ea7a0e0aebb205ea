#include "asynctp/ops.hpp"
#include "asynctp/verify.hpp"

namespace asynctp::verify {

AllGatherMatmulProblem::AllGatherMatmulProblem(const AllGatherMatmulShape& shape,
                                               std::uint64_t seed)
    : Problem(shape) {
  const std::int64_t rows = shape.world_size * shape.m;
  for (int r = 0; r < shape.world_size; ++r) {
    const Rank& rank = ranks_.emplace_back(Rank{allocate(shape.m, shape.k),
                                                allocate(shape.k, shape.n, shape.b_col_major),
                                                allocate(rows, shape.n), allocate(rows, shape.k)});
    add_rank({{{"A shard", rank.a_shard}, {"B", rank.b}},
              {{"C", rank.c}, {"gathered A", rank.a_gathered}}});
  }
  fill_inputs(seed);
}

std::uint64_t AllGatherMatmulProblem::host_bytes(const AllGatherMatmulShape& shape,
                                                 bool with_references) {
  const std::int64_t rows = shape.world_size * shape.m;
  const auto world = static_cast<std::uint64_t>(shape.world_size);
  std::uint64_t total =
      world * (bytes_of(shape.m, shape.k, shape.dtype) + bytes_of(shape.k, shape.n, shape.dtype) +
               bytes_of(rows, shape.n, shape.dtype) + bytes_of(rows, shape.k, shape.dtype));
  if (with_references) {
    // One float64 C per rank is kept; building one also needs the float64
    // gathered A and B while its GEMM runs, on each host thread at once.
    const auto concurrent = static_cast<std::uint64_t>(host_threads(shape.world_size));
    total += world * bytes_of(rows, shape.n, DType::fp32) * 2 +
             concurrent *
                 (bytes_of(rows, shape.k, DType::fp32) + bytes_of(shape.k, shape.n, DType::fp32)) *
                 2;
  }
  return total;
}

const AllGatherMatmulProblem::Rank& AllGatherMatmulProblem::rank(int r) const {
  return ranks_.at(static_cast<std::size_t>(r));
}

RunInfo AllGatherMatmulProblem::call(Comm& comm, const RankTensors& on,
                                     const Options& options) const {
  return fused_all_gather_matmul(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                 on.outputs.at(0).view, &on.outputs.at(1).view, options);
}

RunInfo AllGatherMatmulProblem::plan(const Comm& comm, const RankTensors& on,
                                     const Options& options) const {
  return plan_fused_all_gather_matmul(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                      on.outputs.at(0).view, &on.outputs.at(1).view, options);
}

std::vector<TensorView> AllGatherMatmulProblem::gemm_a_blocks() const {
  std::vector<TensorView> shards;
  for (const Rank& rank : ranks_) shards.push_back(rank.a_shard);
  return shards;
}

// Rank 0's C is that GEMM's product: no second float64 GEMM when it is known.
std::vector<double> AllGatherMatmulProblem::gemm_reference() const {
  return reference(0).empty() ? Problem::gemm_reference() : reference(0);
}

std::vector<double> AllGatherMatmulProblem::compute_reference(int rank) const {
  return reference_all_gather_matmul(gemm_a_blocks(), this->rank(rank).b);
}

Verdict AllGatherMatmulProblem::check_rank(int rank, const std::vector<double>& reference) const {
  const Rank& r = this->rank(rank);
  return check_all_gather_matmul(r.c, &r.a_gathered, gemm_a_blocks(), reference);
}

}  // namespace asynctp::verify
