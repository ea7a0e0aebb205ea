// The producer: the copy engine's analogue. It pulls every rank's shard into
// this rank's gathered buffer in schedule order (own chunk first) and
// releases each chunk's signal after its data.
#pragma once

#include <vector>

#include "cpu/call_context.hpp"

namespace asynctp::cpu {

// The order the producer copies in: the schedule's, or the hook's permutation
// of it. Throws Error(invalid_argument) if the hook's answer is no permutation.
std::vector<int> producer_order(const CallContext& ctx);

void run_producer(CallContext& ctx, const std::vector<int>& order);

}  // namespace asynctp::cpu
