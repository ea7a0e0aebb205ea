// The op's verify problem: its tensors, references and checks. Its call and
// plan are the op's entry points on a rank's tensors (src/call/collective.cpp).
#include "asynctp/verify.hpp"

namespace asynctp::verify {

AllGatherMatmulProblem::AllGatherMatmulProblem(const AllGatherMatmulShape& shape,
                                               std::uint64_t seed)
    : ProblemOf(shape) {
  const std::int64_t rows = shape.world_size * shape.m;
  add_ranks(seed, [&] {
    const Rank rank{allocate(shape.m, shape.k), allocate(shape.k, shape.n, shape.b_col_major),
                    allocate(rows, shape.n),
                    shape.gathered_out ? allocate(rows, shape.k) : TensorView{}};
    RankTensors tensors{{{"A shard", rank.a_shard}, {"B", rank.b}}, {{"C", rank.c}}};
    if (shape.gathered_out) tensors.outputs.push_back({"gathered A", rank.a_gathered});
    return std::pair{rank, tensors};
  });
}

// A float64 C per rank is kept; building one also needs the float64
// gathered A and B while its GEMM runs.
std::uint64_t AllGatherMatmulProblem::host_bytes(const AllGatherMatmulShape& shape,
                                                 bool with_references) {
  const std::int64_t rows = shape.world_size * shape.m;
  return host_bytes_of(shape, with_references,
                       shape.m * shape.k + shape.k * shape.n + rows * shape.n +
                           (shape.gathered_out ? rows * shape.k : 0),
                       rows * shape.n, rows * shape.k + shape.k * shape.n);
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
  return check_all_gather_matmul(r.c, r.a_gathered.data ? &r.a_gathered : nullptr,
                                 gemm_a_blocks(), reference);
}

}  // namespace asynctp::verify
