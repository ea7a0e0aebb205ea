#include <algorithm>
#include <cstdio>

#include "asynctp/verify.hpp"
#include "core/reference.hpp"

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

std::vector<double> reference_matmul_reduce_scatter(const std::vector<TensorView>& a,
                                                    const std::vector<TensorView>& b, int rank) {
  return core::reference_matmul_reduce_scatter(a, b, rank);
}

double tolerance(DType dtype) noexcept { return core::error_tolerance(dtype); }

double reduce_scatter_tolerance(DType dtype, int world_size) noexcept {
  return core::reduce_scatter_error_tolerance(dtype, world_size);
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

Verdict check_matmul_reduce_scatter(const TensorView& out, const std::vector<double>& reference,
                                    int world_size) {
  Verdict verdict = compare("out", out, reference, reduce_scatter_tolerance(out.dtype, world_size));
  verdict.ok = verdict.failure.empty();
  return verdict;
}

}  // namespace asynctp::verify
