// The device work of one rank's call, enqueued in dependency order: the
// producer (every copy, wait and signal write) before the GEMM that consumes
// it. That order is what keeps the call deadlock-free when streams share
// hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, GPU_MAX_HW_QUEUES, or more
// streams than queues):
// each queue is FIFO, and nothing ever waits on work enqueued after it.
#pragma once

#include "gpu/call_spec.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"

namespace asynctp::gpu {

// Forks the side streams from call.stream, enqueues the call (the producer
// of call.link, then enqueue_gemm) and joins them back into call.stream.
void enqueue_call(const CallSpec& call, RankResources& res, RankBackend& backend);

// The consumer half of a call: the planned algorithm's GEMM, which reads the
// gathered buffer as chunks arrive, on res.compute after the transport has
// forked it from the caller's stream. The schedules are written once here;
// the kernels and libraries are the runtime backend's.
// - native: the backend's persistent kernel, gated on res.flags;
// - pipelined: per-chunk library GEMMs in schedule order (pivot first),
//   alternating two lanes (res.compute and res.lane2, joined back into
//   res.compute) so that one chunk's GEMM overlaps the next chunk's wait;
//   chunk c waits on res.arrived[c];
// - decomposed: one library GEMM of the whole gathered buffer once every
//   peer chunk's res.arrived event has completed.
void enqueue_gemm(const CallSpec& call, RankResources& res, RankBackend& backend);

}  // namespace asynctp::gpu
