// The collective operations: the two halves of a tensor-parallel layer pair.
// Both are collective (every rank of the communicator calls them with
// agreeing arguments), throw asynctp::Error, and on invalid arguments on any
// rank fail on every rank with no output written. Options set in code win
// over the ASYNCTP_* environment (ASYNCTP_ALGO, ASYNCTP_WAIT_TIMEOUT_MS,
// ASYNCTP_TILE_M, ASYNCTP_TILE_N; see README). The returned RunInfo names the
// algorithm run and why the planner chose it.
#pragma once

#include "asynctp/comm.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"

namespace asynctp {

// All-gather + matmul (the column-parallel linear).
// Every rank r holds a_shard (m x k, row-major) and b (k x n, row- or
// column-major). Every rank receives
//     c_out = allgather(a_shard_0, ..., a_shard_{W-1}) @ b     ((W*m) x n, row-major)
// and, when a_gathered_out is not null, the gathered A ((W*m) x k, row-major).
// Accumulation is fp32; bf16/fp16 outputs are rounded to nearest even.
// Collective: all ranks call it with agreeing shapes, dtypes and options
// (m, k, dtype, algorithm; n and B's layout are each rank's own).
// Throws asynctp::Error; on invalid arguments no output is written.
RunInfo fused_all_gather_matmul(Comm& comm, const TensorView& a_shard, const TensorView& b,
                                const TensorView& c_out, const TensorView* a_gathered_out,
                                const Options& options = {});

// Matmul + reduce-scatter (the row-parallel linear).
// Every rank r holds a (M x k_r, row-major: all M rows, its K-slice) and b
// (k_r x n, row- or column-major). Rank r receives its M/W rows of the sum
//     out = rows [r*M/W, (r+1)*M/W) of  sum over s of a_s @ b_s   ((M/W) x n, row-major)
// Rules (each named in the error when broken): M divisible by W; b's rows
// equal a's columns; out exactly (M/W) x n; one dtype (bf16, fp16, fp32) for
// all three; fewer than 2^31 elements per tensor; out overlaps neither input.
// Ranks agree on M, n, dtype and algorithm; the K-slices k_r may differ
// (an uneven split of K), as may B's layout.
// Numerics: each rank's partial a_r @ b_r accumulates in fp32 and is rounded
// to the output dtype to cross the link (as NCCL and PyTorch do); the owner
// sums the W partials in fp32 and rounds once (the error bound this gives:
// README, "Matmul + reduce-scatter").
// Options::hooks act on the shipping of partials: reorder permutes the W-1
// peer chunks in send order, before_copy runs before a partial is shipped,
// drop never ships it (its owner then times out naming chunk and rank).
// Throws asynctp::Error; on invalid arguments no output is written.
RunInfo fused_matmul_reduce_scatter(Comm& comm, const TensorView& a, const TensorView& b,
                                    const TensorView& out, const Options& options = {});

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

// The same for fused_matmul_reduce_scatter. Local, not collective.
RunInfo plan_fused_matmul_reduce_scatter(const Comm& comm, const TensorView& a, const TensorView& b,
                                         const TensorView& out, const Options& options = {});

}  // namespace asynctp
