// A rank that cannot make its collective call at all (its caller's own checks
// failed before any matrix reached the library: a NULL pointer, an unknown
// dtype code, a Python tensor of the wrong rank) still takes part in the
// call's agreement, publishing a failed record, so that its peers fail naming
// it instead of waiting for it until their timeout.
#pragma once

#include "asynctp/comm.hpp"
#include "asynctp/error.hpp"

namespace asynctp::capi {

// Collective, in the place of the call the peers are making. Returns once the
// peers were told; throws an Error of the agreement itself (a peer that never
// came) if there was one.
void reject_collectively(Comm& comm, const Error& why);

}  // namespace asynctp::capi
