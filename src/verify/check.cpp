#include <algorithm>
#include <cmath>
#include <cstdio>

#include "asynctp/verify.hpp"
#include "core/reference.hpp"
#include "verify/check_within_bound.hpp"

namespace asynctp::verify {
namespace {

std::string short_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", value);
  return buf;
}

void add_fault(Verdict& verdict, const std::string& fault) {
  verdict.failure += (verdict.failure.empty() ? "" : ", ") + fault;
}

}  // namespace

void poison(const TensorView& host) noexcept { core::poison(host); }

std::vector<double> reference_all_gather_matmul(const std::vector<TensorView>& a_shards,
                                                const TensorView& b) {
  return core::reference_all_gather_matmul(a_shards, b);
}

namespace {

core::PartialSum to_core(PartialSum sum) noexcept {
  return sum == PartialSum::output_dtype ? core::PartialSum::output_dtype : core::PartialSum::fp32;
}

}  // namespace

ReduceScatterReference reference_matmul_reduce_scatter(const std::vector<TensorView>& a,
                                                       const std::vector<TensorView>& b, int rank) {
  core::ReduceScatterReference ref = core::reference_matmul_reduce_scatter(a, b, rank);
  return {std::move(ref.value), std::move(ref.magnitude), std::move(ref.accumulation_error),
          ref.world_size};
}

double tolerance(DType dtype) noexcept { return core::error_tolerance(dtype); }

std::vector<double> reduce_scatter_error_bound(const ReduceScatterReference& reference,
                                               DType dtype, PartialSum sum) {
  // A view of the public terms as core's (the vectors are copied: a bound
  // is computed once per rank and check).
  const core::ReduceScatterReference terms{reference.value, reference.magnitude,
                                           reference.accumulation_error, reference.world_size};
  return core::reduce_scatter_error_bound(terms, dtype, to_core(sum));
}

namespace {

// `output` (named so in the failure, "C") against its reference and bound;
// verdict.failure lists every fault found, and ok is left to the caller,
// which may add faults of its own.
Verdict compare(const char* output, const TensorView& got, const std::vector<double>& reference,
                double tolerance) {
  const core::Comparison cmp = core::compare_to_reference(got, reference);
  Verdict verdict;
  verdict.relative_error = cmp.relative_frobenius_error;
  verdict.tolerance = tolerance;
  const std::string name = std::string(" ") + output + " elements ";
  if (cmp.unwritten > 0) add_fault(verdict, std::to_string(cmp.unwritten) + name + "never written");
  if (cmp.non_finite > cmp.unwritten) {
    add_fault(verdict, std::to_string(cmp.non_finite - cmp.unwritten) + name + "not finite");
  }
  if (cmp.non_finite == 0 && cmp.relative_frobenius_error > tolerance) {
    add_fault(verdict, std::string(output) + " rel. error " +
                           short_number(cmp.relative_frobenius_error) + " > " +
                           short_number(tolerance));
  }
  return verdict;
}

}  // namespace

Verdict check_all_gather_matmul(const TensorView& c, const TensorView* a_gathered,
                                const std::vector<TensorView>& a_shards,
                                const std::vector<double>& reference) {
  Verdict verdict = compare("C", c, reference, tolerance(c.dtype));
  std::int64_t row = 0;
  for (std::size_t s = 0; a_gathered != nullptr && s < a_shards.size(); ++s) {
    if (!core::bitwise_equal_rows(*a_gathered, row, a_shards[s])) {
      add_fault(verdict,
                "gathered A rows of rank " + std::to_string(s) + "'s shard differ from the shard");
      break;
    }
    row += a_shards[s].rows;
  }
  verdict.ok = verdict.failure.empty();
  return verdict;
}

Summary summarize(const std::vector<Verdict>& verdicts) {
  Summary summary;
  for (std::size_t r = 0; r < verdicts.size(); ++r) {
    summary.max_relative_error = std::max(summary.max_relative_error, verdicts[r].relative_error);
    if (verdicts[r].ok) continue;
    summary.ok = false;
    summary.failures.push_back("rank " + std::to_string(r) + ": " + verdicts[r].failure);
  }
  return summary;
}

Verdict check_within_bound(const TensorView& out, const std::vector<double>& reference,
                           const std::vector<double>& bound) {
  // Unwritten and non-finite elements as every check finds them; the error
  // is then judged element by element, the relative figures kept for reports.
  Verdict verdict = compare("out", out, reference, INFINITY);
  verdict.tolerance = core::relative_frobenius_norm(bound, reference);
  const core::BoundComparison cmp = core::compare_within_bound(out, reference, bound);
  if (cmp.beyond > 0) {
    add_fault(verdict, std::to_string(cmp.beyond) + " out elements beyond their error bound " +
                           "(worst at (" + std::to_string(cmp.worst_row) + ", " +
                           std::to_string(cmp.worst_col) + "): " + short_number(cmp.worst_error) +
                           " > " + short_number(cmp.worst_bound) + "; out rel. error " +
                           short_number(verdict.relative_error) + ", the bound's " +
                           short_number(verdict.tolerance) + ")");
  }
  verdict.ok = verdict.failure.empty();
  return verdict;
}

Verdict check_matmul_reduce_scatter(const TensorView& out, const ReduceScatterReference& reference,
                                    PartialSum sum) {
  return check_within_bound(out, reference.value,
                            reduce_scatter_error_bound(reference, out.dtype, sum));
}

}  // namespace asynctp::verify
