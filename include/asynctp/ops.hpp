// The collective operations.
#pragma once

#include "asynctp/comm.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"

namespace asynctp {

// Every rank r holds a_shard (m x k, row-major) and b (k x n, row- or
// column-major). Every rank receives
//     c_out = allgather(a_shard_0, ..., a_shard_{W-1}) @ b     ((W*m) x n, row-major)
// and, when a_gathered_out is not null, the gathered A ((W*m) x k, row-major).
// Accumulation is fp32; bf16/fp16 outputs are rounded to nearest even.
// Collective: all ranks call it with agreeing shapes, dtypes and options.
// Throws asynctp::Error; on invalid arguments no output is written.
RunInfo fused_all_gather_matmul(Comm& comm, const TensorView& a_shard, const TensorView& b,
                                const TensorView& c_out, const TensorView* a_gathered_out,
                                const Options& options = {});

// GPU backends enqueue a call on options.stream and return; errors that only
// the device can see (a chunk whose signal never came) surface here. Blocks
// until this rank's enqueued calls are done (bounded), then throws the first
// such error. A no-op for the CPU backend.
void synchronize(Comm& comm);

}  // namespace asynctp

namespace asynctp {

// Validates the arguments and returns what fused_all_gather_matmul would run,
// without communicating or writing anything. Local, not collective.
RunInfo plan_fused_all_gather_matmul(const Comm& comm, const TensorView& a_shard,
                                     const TensorView& b, const TensorView& c_out,
                                     const TensorView* a_gathered_out, const Options& options = {});

}  // namespace asynctp
