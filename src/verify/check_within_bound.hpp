// The reduce-scatter's elementwise check, shared by the public check (which
// computes the bound) and the problem (which keeps it beside its reference).
#pragma once

#include <vector>

#include "asynctp/verify.hpp"

namespace asynctp::verify {

// `out` against `reference` and a bound of equal size: every element
// written, finite and within its bound. The verdict's tolerance is the
// bound's relative Frobenius norm.
Verdict check_within_bound(const TensorView& out, const std::vector<double>& reference,
                           const std::vector<double>& bound);

}  // namespace asynctp::verify
