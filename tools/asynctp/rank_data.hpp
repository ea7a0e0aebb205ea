// One rank's tensors for `asynctp run`: its A shard and B (random inputs),
// and the outputs it receives, C and the gathered A.
#pragma once

#include <cstdint>
#include <vector>

#include "aligned_buffer.hpp"
#include "asynctp/tensor.hpp"
#include "cli_args.hpp"

namespace asynctp::tool {

struct RankData {
  AlignedBuffer a_storage, b_storage, c_storage, gathered_storage;
  TensorView a_shard;   // m x k, row-major
  TensorView b;         // k x n, row- or column-major per --b-layout
  TensorView c;         // (W*m) x n, row-major
  TensorView gathered;  // (W*m) x k, row-major
};

// Bytes that allocate_ranks and the --check references will need, so that a
// run too big for the machine is refused before it starts swapping.
std::uint64_t planned_bytes(const RunArgs& args);

// Refuses (UsageError naming the flags) a run whose host buffers would not
// fit in the machine's memory: better than the OOM killer or swap after minutes.
void check_host_memory(const RunArgs& args);

// A seed from the clock when --seed is not given: nine digits, easy to retype
// and exact in every JSON reader (doubles hold integers up to 2^53 only).
std::uint64_t clock_seed();

// Allocates every rank's buffers (not touched yet: fill_inputs does that on
// the rank's own thread).
std::vector<RankData> allocate_ranks(const RunArgs& args);

// Draws rank `rank`'s A shard and B from N(0, 1) with a stream derived from
// (seed, rank), rounded to the storage dtype. The same seed gives the same data.
void fill_inputs(RankData& data, std::uint64_t seed, int rank);

}  // namespace asynctp::tool
