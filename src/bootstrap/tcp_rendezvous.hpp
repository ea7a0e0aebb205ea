// The out-of-band exchange a multi-process job needs before NCCL exists:
// every rank contributes a small record (say its host and GPU, and on rank 0
// the NCCL unique id) and every rank receives all records, in rank order.
//
// Rank 0 listens on its rendezvous port (launch_env.hpp: ASYNCTP_RENDEZVOUS_PORT,
// by default MASTER_PORT + 1, never the TCPStore's MASTER_PORT); the others
// connect to MASTER_ADDR. TCP rather than a file on a shared path: every
// launcher that spans nodes gives (or lets the user give) MASTER_ADDR, while
// a filesystem shared by all nodes is not guaranteed, and its client caching
// makes polling a file slow and fragile. No extra service runs: rank 0 is the
// server for the length of the call. IPv4 only (MASTER_ADDR a dotted address
// or a name that resolves to one).
//
// Bounded, and the same verdict everywhere: rank 0 accepts connections until
// every peer has said hello or timeout_ms has passed, answers each hello at
// once (so that a peer that reached some other service on the port learns it
// quickly), checks the hellos as they come (same world size, ranks in range
// and each once) and sends every connected peer either all records or the
// same error, which it also throws. A peer retries connecting until
// timeout_ms and names the address and port it could not reach or that did
// not answer.
//
// Nothing a connection sends can make rank 0 crash, hang or grow without
// bound: a record's length is checked against kMaxRecordBytes before anything
// is allocated, a connection gets a few seconds to say hello before rank 0
// moves on, a connection that is not a rank is closed and ignored, and rank 0
// keeps at most one record per rank of the world.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/rendezvous_wire.hpp"

namespace asynctp::bootstrap {

// Throws Error(invalid_argument) on a record over kMaxRecordBytes or a bad
// LaunchInfo, Error(mismatch) when the ranks disagree (world size, a rank
// out of range or seen twice, another rendezvous version), Error(timeout)
// when the exchange did not complete in time, Error(backend) on a socket
// failure: on rank 0 at once when its port is taken (naming the port and
// ASYNCTP_RENDEZVOUS_PORT), on a peer when what listens there is not an
// asynctp rank 0. A world of one returns {record} without touching the network.
std::vector<std::string> all_gather_records(const LaunchInfo& info, const std::string& record,
                                            std::int64_t timeout_ms);

}  // namespace asynctp::bootstrap
