// The producer: the copy engine's analogue. All-gather + matmul: it pulls
// every rank's shard into this rank's gathered buffer in schedule order (own
// chunk first) and releases each chunk's signal after its data. (Matmul +
// reduce-scatter's producer, which pushes partials: shipper.hpp.)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cpu/call_context.hpp"

namespace asynctp::cpu {

// The order the producer works in: the schedule's `order`, or the reorder
// hook's permutation of it. Throws Error(invalid_argument) if the hook's
// answer is no permutation.
std::vector<int> producer_order(const CallContext& ctx, std::vector<int> order);

// The all-gather's producer: copies every shard into the gathered buffer in
// `order` and releases each chunk's signal.
void run_producer(CallContext& ctx, const std::vector<int>& order);

// The test hooks around one copy, for every op's producer: before_copy, then
// drop. True when the chunk is dropped (recorded in the trace with `args`):
// the producer must then neither copy nor signal it.
bool run_copy_hooks(CallContext& ctx, int chunk, const std::string& args);

// One copy of any op's producer: `bytes` from src to dst, then flags[index]
// released with the call's epoch (after the bytes); traced as a "copy" span
// `copy_name` and a "signal" instant `signal_name`, both with `args`.
void copy_and_signal(CallContext& ctx, void* dst, const void* src, std::size_t bytes,
                     core::ChunkSignals& flags, int index, const std::string& copy_name,
                     const std::string& signal_name, const std::string& args);

}  // namespace asynctp::cpu
