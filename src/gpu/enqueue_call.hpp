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
// of call.link, then the planned GEMM on `backend`, gpu/gemm_paths.hpp) and
// joins them back into call.stream.
void enqueue_call(const CallSpec& call, RankResources& res, RankBackend& backend);

}  // namespace asynctp::gpu
