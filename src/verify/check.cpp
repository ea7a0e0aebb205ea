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

}  // namespace

void poison(const TensorView& host) noexcept { core::poison(host); }

std::vector<double> reference_all_gather_matmul(const std::vector<TensorView>& a_shards,
                                                const TensorView& b) {
  return core::reference_all_gather_matmul(a_shards, b);
}

double tolerance(DType dtype) noexcept { return core::error_tolerance(dtype); }

Verdict check_all_gather_matmul(const TensorView& c, const TensorView* a_gathered,
                                const std::vector<TensorView>& a_shards,
                                const std::vector<double>& reference) {
  const core::Comparison got = core::compare_to_reference(c, reference);
  Verdict verdict;
  verdict.relative_error = got.relative_frobenius_error;
  verdict.tolerance = tolerance(c.dtype);
  std::string& why = verdict.failure;
  const auto add = [&why](const std::string& fault) { why += (why.empty() ? "" : ", ") + fault; };
  if (got.unwritten > 0) add(std::to_string(got.unwritten) + " C elements never written");
  if (got.non_finite > got.unwritten) {
    add(std::to_string(got.non_finite - got.unwritten) + " C elements not finite");
  }
  if (got.non_finite == 0 && got.relative_frobenius_error > verdict.tolerance) {
    add("C rel. error " + short_number(got.relative_frobenius_error) + " > " +
        short_number(verdict.tolerance));
  }
  std::int64_t row = 0;
  for (std::size_t s = 0; a_gathered != nullptr && s < a_shards.size(); ++s) {
    if (!core::bitwise_equal_rows(*a_gathered, row, a_shards[s])) {
      add("gathered A rows of rank " + std::to_string(s) + "'s shard differ from the shard");
      break;
    }
    row += a_shards[s].rows;
  }
  verdict.ok = why.empty();
  return verdict;
}

}  // namespace asynctp::verify
