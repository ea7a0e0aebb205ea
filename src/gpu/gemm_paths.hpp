// The consumer half of a call: the GEMM that reads the gathered buffer as
// chunks arrive, on res.compute after the transport has forked it from the
// caller's stream (pipelined also on res.lane2, joined back into
// res.compute). The schedules are written once here; the kernels and
// libraries are the runtime backend's (gpu/rank_backend.hpp).
#pragma once

#include "gpu/call_spec.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"

namespace asynctp::gpu {

// The planned algorithm's GEMM:
// - native: the backend's persistent kernel, gated on res.flags;
// - pipelined: per-chunk library GEMMs in schedule order (pivot first),
//   alternating two lanes so that one chunk's GEMM overlaps the next chunk's
//   wait; chunk c waits on res.arrived[c];
// - decomposed: one library GEMM of the whole gathered buffer once every
//   peer chunk's res.arrived event has completed.
void enqueue_gemm(const CallSpec& call, RankResources& res, RankBackend& backend);

// The backend's library GEMM of `lane`; throws Error(unsupported) naming
// `path` when the build has none (the planner never picks such a path).
LibraryGemm& library_lane(RankBackend& backend, int lane, const char* path);

}  // namespace asynctp::gpu
