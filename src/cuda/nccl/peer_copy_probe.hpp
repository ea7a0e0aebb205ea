// Do the transport's pulls need SMs? The native algorithm runs one
// persistent GEMM on every SM and waits inside it for chunks that copies
// bring, so a copy that runs as a kernel cannot start until the GEMM gives up
// its SMs: with the GEMM's bounded waits that is a timeout error, never a
// result. Host<->device copies use the copy engines, and a same-GPU
// device-to-device cudaMemcpyAsync runs on SMs (seen hanging beside the full
// grid on the H200); for a copy from a peer GPU's memory, mapped here by
// NCCL, it is up to the driver. So it is measured, not assumed.
//
// The probe: a grid that holds every thread slot of every SM of `device`
// waits, bounded, for a flag; once every block of it is resident, a second
// stream copies `bytes` from `source` into this device's memory with the
// method under test and then releases the flag with a stream memory
// operation (no SM). A copy that completes while the grid still holds the
// device needed no SM (copy_engines); one that completes only after the
// grid's blocks gave up waiting did (needs_sms). A grid that could not hold
// every SM at once (other work on the device) proves nothing (inconclusive).
// The copy's bytes are compared with the source's either way.
//
// The planner's side is pure: peer_copies_need_sms and
// peer_copy_native_blocker turn a probe of the method the transport pulls
// with into "avoid native" and the reason; pipelined still runs (its copies
// may share SMs with per-chunk GEMMs, which finish without waiting for them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/planner.hpp"

namespace asynctp::nccl {

enum class CopyMethod {
  // cudaMemcpyAsync(cudaMemcpyDefault): how enqueue_nccl_call pulls today.
  memcpy_async,
  // cudaMemcpyBatchAsync with cudaMemcpyFlagPreferOverlapWithCompute and
  // stream-ordered source access: how NCCL's copy-engine collectives copy
  // (CUDA 12.8+; NCCL notes the flag is honoured for device copies from
  // CUDA 13.1 on).
  memcpy_batch_prefer_overlap,
};
const char* to_string(CopyMethod method) noexcept;

enum class CopyVerdict {
  copy_engines,  // completed while the grid held every SM: needs no SM
  needs_sms,     // completed only after the grid's bounded wait gave up its SMs
  inconclusive,  // the grid never held every SM at once: nothing learned
  failed,        // the copy could not be enqueued or run, or its bytes were wrong
};
const char* to_string(CopyVerdict verdict) noexcept;

struct PeerCopyProbe {
  CopyMethod method = CopyMethod::memcpy_async;
  CopyVerdict verdict = CopyVerdict::inconclusive;
  // Device time from the grid holding every SM to its first block seeing the
  // flag; negative when no block saw it before giving up.
  double copy_ms = -1;
  std::string detail;  // one line: method, source, verdict and the evidence
};

// Pure. True when the probe saw the copy wait for SMs.
bool peer_copies_need_sms(const PeerCopyProbe& probe) noexcept;

// Pure. Why native must not run when the transport pulls with probe.method,
// or nullopt when the probe does not forbid it (copy_engines; inconclusive
// and failed prove nothing about SMs: the native kernel's bounded waits
// still turn a starved copy into a timeout error, never a hang).
std::optional<std::string> peer_copy_native_blocker(const PeerCopyProbe& probe);

// Pure. Marks native unsupported in caps, with peer_copy_native_blocker's
// reason, when there is one: auto then picks pipelined (or decomposed) and
// a forced native is an error that says why.
void apply_peer_copy_probe(const PeerCopyProbe& probe, core::BackendCaps& caps);

struct ProbeOptions {
  std::size_t bytes = 16u << 20;        // copied from source
  std::int64_t grid_timeout_ms = 2000;  // each of the grid's two bounded waits
};

// Runs the probe on `device` (made current): copies options.bytes from
// `source` (readable by `device`: a peer GPU's memory with peer access or an
// NCCL window mapping, pinned host memory, or this device's memory) into a
// fresh buffer of `device`. `source_name` says what the source is in detail.
// Never hangs: the grid's waits are bounded, and the host gives the whole
// probe 4 grid timeouts + 10 s before it answers failed (and leaves the
// probe's buffers allocated, as the device may still use them). Throws
// nothing; every problem is a verdict with its detail.
PeerCopyProbe probe_copy_beside_full_grid(int device, const void* source,
                                          const std::string& source_name, CopyMethod method,
                                          const ProbeOptions& options = {});

}  // namespace asynctp::nccl
