// The one collective-call pipeline every op and every transport share:
//   check locally -> ranks agree -> (plan agreed) -> execute or enqueue
// and, for GPU transports, asynctp::synchronize later. Written once here.
#pragma once

#include "asynctp/error.hpp"
#include "asynctp/options.hpp"
#include "call/transport.hpp"
#include "core/op_call.hpp"

namespace asynctp::call {

// Collective: every rank of the transport's group calls it with agreeing
// arguments. Throws Error; on invalid arguments nothing is written.
RunInfo run_collective(Transport& transport, const core::OpCall& call, const Options& options);

// In the place of a collective call that this rank cannot make at all (its
// caller could not even form the arguments): publishes a failed record
// saying `why`, so that the peers making the call fail naming this rank
// instead of waiting for it. Returns once they were told; throws an Error of
// the agreement itself (e.g. a peer that never came) if there was one.
void reject_collective(Transport& transport, const Error& why);

// The local check and plan alone: no communication, nothing written.
RunInfo plan_collective(const Transport& transport, const core::OpCall& call,
                        const Options& options);

// The Transport behind a Comm; throws Error(invalid_argument) naming `comm`
// when the communicator was not made by this library.
Transport& transport_of(Comm& comm);
const Transport& transport_of(const Comm& comm);

}  // namespace asynctp::call
