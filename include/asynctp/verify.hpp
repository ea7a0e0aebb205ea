// Checking results as asynctp's own tests and `asynctp run --check` do:
// seeded random inputs, outputs poisoned before a call so that an element it
// never wrote shows, and every rank's output compared with a float64
// reference: the all-gather's C by relative Frobenius error against a bound
// derived from the output dtype, the reduce-scatter's out element by element
// against a rigorous bound computed from the same inputs.
// Host tensors only: copy device outputs back first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "asynctp/comm.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"

namespace asynctp::verify {

// A stream of N(0, 1) draws. Pairs (seed, stream) that differ in either give
// unrelated streams, so rank r of a run seeded s draws from Random(s, r) and
// the same seed always gives the same inputs. Draw i of a stream is a
// function of (seed, stream, i) alone (a counter-based generator), so any
// thread may draw any block of a stream, and the values do not depend on how
// the blocks are shared out.
class Random {
 public:
  Random(std::uint64_t seed, std::uint64_t stream);
  // Fills a dense (row- or column-major) host tensor with the next draws in
  // memory order, each rounded to nearest even in the tensor's dtype.
  // Throws Error(invalid_argument) for a view with gaps between elements.
  void fill_normal(const TensorView& host);
  // What fill_normal writes into elements [begin, end) of the tensor's
  // memory order, without moving on; a whole tensor filled by parts and then
  // skip(host.numel()) leaves the stream where fill_normal would. Throws
  // Error(invalid_argument) for a view with gaps or a range outside it.
  void fill_normal_part(const TensorView& host, std::int64_t begin, std::int64_t end) const;
  // Moves on past `count` draws.
  void skip(std::int64_t count) noexcept { drawn_ += static_cast<std::uint64_t>(count); }

 private:
  std::uint64_t key_;
  std::uint64_t drawn_ = 0;  // draws handed out so far
};

// Fills a host tensor with a NaN bit pattern that no computation produces
// from finite inputs.
void poison(const TensorView& host) noexcept;

// What fused_all_gather_matmul's C is on the rank holding `b`, in float64:
// the shards stacked in rank order, times `b` ((sum of shard rows) x b.cols,
// row-major). Inputs are read exactly: every storage dtype widens to double.
std::vector<double> reference_all_gather_matmul(const std::vector<TensorView>& a_shards,
                                                const TensorView& b);

// How a run of fused_matmul_reduce_scatter summed each element's W partials
// (each already rounded to out's dtype): what its error bound allows for.
enum class PartialSum {
  fp32,          // in fp32, rounded to out's dtype once: every backend's
                 // pipelined path, the cpu and loopback decomposed ones
  output_dtype,  // a ring whose every step stores its running sum in out's
                 // dtype: the nccl backend's decomposed path (NCCL's
                 // reduce-scatter)
};

// What fused_matmul_reduce_scatter's out is on rank `rank`, in float64 (its
// M/W rows of the sum over s of a[s] @ b[s], (M/W) x b[s].cols, row-major,
// W = a.size(); inputs read exactly), with the per-element terms its error
// bound is made of: the sum over s of the partials' magnitudes and the
// bound on their fp32 accumulation errors (|a[s]| |b[s]| scaled by the
// K-slice's accumulation allowance).
struct ReduceScatterReference {
  std::vector<double> value;
  std::vector<double> magnitude;
  std::vector<double> accumulation_error;
  int world_size = 1;
};
ReduceScatterReference reference_matmul_reduce_scatter(const std::vector<TensorView>& a,
                                                       const std::vector<TensorView>& b, int rank);

// The relative Frobenius error an output stored as `dtype` may have with fp32
// accumulation: about one ulp of the output, whose rounding dominates.
double tolerance(DType dtype) noexcept;

// Per element of out, the largest error |out - reference.value| a correct
// run with out of `dtype` and partials summed as `sum` can have: a rigorous
// bound from the rounding of every step (derived in src/core/reference.hpp),
// not a statistical allowance, so it holds for any inputs.
std::vector<double> reduce_scatter_error_bound(const ReduceScatterReference& reference,
                                               DType dtype, PartialSum sum);

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

// Every rank's verdict in one: ok when all are, the largest error, and each
// failure led by its rank ("rank 3: 12 C elements never written").
struct Summary {
  bool ok = true;
  double max_relative_error = 0;  // infinite when some output is not finite
  std::vector<std::string> failures;
};
Summary summarize(const std::vector<Verdict>& verdicts);

// One rank's host copy of fused_matmul_reduce_scatter's out against its
// reference: every element written, finite and within its error bound
// (reduce_scatter_error_bound(reference, out's dtype, sum)). The verdict's
// tolerance is the bound's relative Frobenius norm, beside the output's
// relative error, for reports; the check itself is elementwise.
Verdict check_matmul_reduce_scatter(const TensorView& out, const ReduceScatterReference& reference,
                                    PartialSum sum = PartialSum::fp32);

// ---- One op's problem across W ranks, whole.

// The sizes of a problem. Both ops speak of M = W * m rows: the gathered A
// and C of the all-gather, every rank's A of the reduce-scatter.
struct ProblemShape {
  int world_size = 1;
  // Rows per rank: of each rank's A shard (all-gather), of each rank's out
  // (reduce-scatter).
  std::int64_t m = 0;
  std::int64_t n = 0;
  // Columns of each rank's A, rows of its B: each rank's K-slice in the
  // reduce-scatter.
  std::int64_t k = 0;
  DType dtype = DType::bf16;
  bool b_col_major = false;
  // The reduce-scatter's: how the run checked sums its partials (the error
  // bound allows for it).
  PartialSum partial_sum = PartialSum::fp32;
  // The all-gather's: whether its calls ask for the gathered A too
  // (a_gathered_out; false: C alone, as PyTorch's return_A=False, and the
  // ranks have no gathered A to check).
  bool gathered_out = true;
};
using AllGatherMatmulShape = ProblemShape;
using MatmulReduceScatterShape = ProblemShape;

// One rank's tensors of a call, in the op's argument order: the inputs, drawn
// from Random(seed, rank) in this order, and the outputs, poisoned before a
// checked call. Each is named as errors name it ("A shard").
struct RankTensors {
  struct Named {
    std::string name;
    TensorView view;
  };
  std::vector<Named> inputs;
  std::vector<Named> outputs;
};

// What every op's problem shares: every rank's host tensors, their
// references and checks. The host work runs on at most the machine's
// hardware threads: the inputs are drawn in blocks on all of them; the
// references and checks one rank per thread, so that many ranks do not mean
// as many float64 GEMMs in memory. The op's own part is its tensors, call,
// reference and check.
class Problem {
 public:
  virtual ~Problem();
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  const ProblemShape& shape() const noexcept;
  const RankTensors& tensors(int rank) const;
  // The bytes of every rank's tensors: what placing them on devices takes.
  std::uint64_t tensor_bytes() const noexcept;

  // Rank comm.rank()'s call on `on`: its host tensors, or device copies of
  // them in the same order. plan() runs nothing (the op's plan_ function).
  virtual RunInfo call(Comm& comm, const RankTensors& on, const Options& options) const = 0;
  virtual RunInfo plan(const Comm& comm, const RankTensors& on, const Options& options) const = 0;

  // The reference of every rank `wanted` accepts (default: all), computed
  // once, for check(): at full size each is a long float64 GEMM.
  void compute_references(const std::function<bool(int rank)>& wanted = {});
  // Rank r's reference; empty when not computed.
  const std::vector<double>& reference(int r) const;
  void poison_outputs();
  // The op's check of every rank that has a reference (the others are ok):
  // one verdict per rank.
  std::vector<Verdict> check() const;

  // Rank 0's GEMM alone, as the decomposed algorithm runs it before or after
  // the communication (an overlap benchmark's T_gemm): A as host row blocks
  // stacked in order, times rank 0's B (its second input). And that GEMM's
  // float64 product, to check it by.
  virtual std::vector<TensorView> gemm_a_blocks() const = 0;
  virtual std::vector<double> gemm_reference() const;

 protected:
  // Throws std::bad_alloc when the memory is not there.
  explicit Problem(const ProblemShape& shape);
  // Host memory of `shape`'s dtype, untouched until filled.
  TensorView allocate(std::int64_t rows, std::int64_t cols, bool col_major = false);
  // Adds the next rank's tensors; once all are added, fill_inputs draws
  // every rank's inputs, Random(seed, rank) in their order.
  void add_rank(RankTensors tensors);
  void fill_inputs(std::uint64_t seed);
  // How many host threads a problem of W ranks uses at once.
  static int host_threads(int world_size);
  static std::uint64_t bytes_of(std::int64_t rows, std::int64_t cols, DType dtype);
  // What host_bytes says of a problem whose ranks each hold
  // `tensor_elements` elements of shape.dtype, keep a reference of
  // `reference_elements` float64s, and need `scratch_elements` float64s on
  // each host thread while one reference is computed.
  static std::uint64_t host_bytes_of(const ProblemShape& shape, bool with_references,
                                     std::int64_t tensor_elements, std::int64_t reference_elements,
                                     std::int64_t scratch_elements);

  virtual std::vector<double> compute_reference(int rank) const = 0;
  virtual Verdict check_rank(int rank, const std::vector<double>& reference) const = 0;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// An op's problem with its ranks' arguments by name (RankArguments).
template <typename RankArguments>
class ProblemOf : public Problem {
 public:
  using Rank = RankArguments;
  const Rank& rank(int r) const { return ranks_.at(static_cast<std::size_t>(r)); }

 protected:
  using Problem::Problem;
  // W ranks, each with the arguments make() returns beside their
  // RankTensors; then every rank's inputs are drawn.
  template <typename Make>
  void add_ranks(std::uint64_t seed, Make&& make) {
    for (int r = 0; r < shape().world_size; ++r) {
      auto [arguments, tensors] = make();
      ranks_.push_back(arguments);
      add_rank(std::move(tensors));
    }
    fill_inputs(seed);
  }
  std::vector<Rank> ranks_;
};

// One rank's arguments of fused_all_gather_matmul.
struct AllGatherMatmulRank {
  TensorView a_shard;     // m x k, row-major
  TensorView b;           // k x n, row- or column-major
  TensorView c;           // (W*m) x n, row-major
  TensorView a_gathered;  // (W*m) x k, row-major; none (null) without gathered_out
};

// fused_all_gather_matmul across W ranks. Each rank holds its A shard and its
// own B (in a column-parallel layer each rank holds another slice of the
// weight) and receives C and the gathered A.
class AllGatherMatmulProblem final : public ProblemOf<AllGatherMatmulRank> {
 public:
  // Throws std::bad_alloc when the memory is not there.
  AllGatherMatmulProblem(const AllGatherMatmulShape& shape, std::uint64_t seed);

  // The host memory a problem of `shape` takes, with its references and what
  // computing them needs at once: to refuse one that cannot fit up front.
  static std::uint64_t host_bytes(const AllGatherMatmulShape& shape, bool with_references);

  RunInfo call(Comm& comm, const RankTensors& on, const Options& options) const override;
  RunInfo plan(const Comm& comm, const RankTensors& on, const Options& options) const override;
  std::vector<TensorView> gemm_a_blocks() const override;
  std::vector<double> gemm_reference() const override;  // rank 0's, when computed

 private:
  std::vector<double> compute_reference(int rank) const override;
  Verdict check_rank(int rank, const std::vector<double>& reference) const override;
};

// One rank's arguments of fused_matmul_reduce_scatter.
struct MatmulReduceScatterRank {
  TensorView a;    // (W*m) x k, row-major
  TensorView b;    // k x n, row- or column-major
  TensorView out;  // m x n, row-major
};

// fused_matmul_reduce_scatter across W ranks, every rank with the same
// K-slice k. Each rank holds A (M x k, M = W * m) and B and receives its m
// rows of the sum of the W partial products.
class MatmulReduceScatterProblem final : public ProblemOf<MatmulReduceScatterRank> {
 public:
  // Throws std::bad_alloc when the memory is not there.
  MatmulReduceScatterProblem(const MatmulReduceScatterShape& shape, std::uint64_t seed);

  // As AllGatherMatmulProblem::host_bytes.
  static std::uint64_t host_bytes(const MatmulReduceScatterShape& shape, bool with_references);

  RunInfo call(Comm& comm, const RankTensors& on, const Options& options) const override;
  RunInfo plan(const Comm& comm, const RankTensors& on, const Options& options) const override;
  std::vector<TensorView> gemm_a_blocks() const override;

 private:
  // Stores the rank's error bound beside the reference the base keeps.
  std::vector<double> compute_reference(int rank) const override;
  Verdict check_rank(int rank, const std::vector<double>& reference) const override;

  // Per rank, written by compute_reference (each rank's slot by one thread).
  mutable std::vector<std::vector<double>> bounds_;
};

}  // namespace asynctp::verify
