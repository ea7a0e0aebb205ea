// What the ranks of a launched job tell each other through the rendezvous
// (tcp_rendezvous.hpp) before any communicator exists: small records of
// "key=value" lines (this host's name, the GPU, rank 0's communicator id).
#pragma once

#include <map>
#include <string>

namespace asynctp::bootstrap {

// The fields of a record; a line without '=' is ignored, a repeated key
// keeps its last value.
std::map<std::string, std::string> parse_record(const std::string& record);

// This host's name (gethostname), or "unknown-host".
std::string host_name();

}  // namespace asynctp::bootstrap
