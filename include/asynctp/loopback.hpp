// The loopback group of asynctp's GPU backend: W virtual ranks on one GPU,
// each with its own host thread and stream, for tests and single-GPU
// measurements. The ranks run the same code a multi-GPU communicator runs;
// only the way a peer's shard reaches this rank's gathered buffer (the link)
// is modelled.
//
// One implementation serves both GPU runtimes: a library is built for CUDA
// (asynctp/cuda.hpp names these types asynctp::cuda::..., and the library
// defines ASYNCTP_HAVE_CUDA_BACKEND) or, in a ROCm build, for HIP
// (asynctp/hip.hpp, ASYNCTP_HAVE_HIP_BACKEND). Include either of those.
//
// Tensors passed to a loopback rank live in device memory of the group's GPU
// (TensorView::device = {DeviceKind::cuda or DeviceKind::hip, device}).
// Calls are asynchronous: they enqueue on Options::stream (a cudaStream_t or
// hipStream_t as void*) and return; asynctp::synchronize(comm) waits and
// reports errors that only the device sees.
//
// This header needs no CUDA or HIP headers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "asynctp/comm.hpp"
#include "asynctp/group.hpp"

namespace asynctp::loopback {

// How a peer's shard reaches this rank on one GPU. Neither link takes SMs
// (compute units) while a persistent GEMM may occupy them: a same-GPU
// device-to-device copy runs as a kernel and was seen deadlocking a full
// grid on CUDA.
enum class Link {
  // A PCIe link: each peer chunk goes device -> pinned host -> device, two
  // copy-engine hops pipelined over two streams (PCIe speed, real data).
  pcie,
  // A faster link, modelled: the peer chunks are placed in the gathered
  // buffer before the GEMM starts (a device copy, stream-ordered ahead of the
  // kernel), and each chunk's signal is released no earlier than its
  // modelled arrival time (a host clock thread sets a host-mapped word on
  // schedule; a stream waits for it, then writes the signal). Signals go per
  // piece of a chunk (up to 4); the i-th piece in arrival order arrives
  // (i + 1) * piece_bytes / link_gbps after the clock starts, so the last
  // peer chunk has arrived after (world_size - 1) * chunk_bytes / link_gbps.
  arrival,
};

const char* to_string(Link link) noexcept;
// Parses "pcie" or "arrival"; throws Error naming `what` otherwise.
Link parse_link(const std::string& text, const std::string& what);

struct LoopbackConfig {
  int world_size = 1;
  int device = 0;  // GPU ordinal of the library's runtime (CUDA or HIP)
  Link link = Link::pcie;
  double link_gbps = 400;  // Link::arrival: GB/s (1e9 bytes/s) into each rank
  // Each rank's device work waits for the previous rank's (in rank order), so
  // each call runs as if its rank had the GPU to itself: per-rank timings for
  // benchmarks. Calls cannot then be captured in graphs.
  bool serialize_ranks = false;
};

// "" when a loopback group can run on `device`; otherwise why not (no
// driver, no such device, a GPU too old for bf16 GEMMs). Whether native can
// run is the planner's answer per call (RunInfo::reason).
std::string unavailable_reason(int device = 0);

class LoopbackGroup final : public RankGroup {
 public:
  // Throws Error(invalid_argument) on a bad config, Error(backend) when the
  // device cannot be used (unavailable_reason).
  explicit LoopbackGroup(const LoopbackConfig& config);
  ~LoopbackGroup() override;

  int world_size() const noexcept override;
  const LoopbackConfig& config() const noexcept;
  Comm& comm(int rank) override;
  // run(body): RankGroup's, one host thread per rank with the group's device
  // current.

  // Device time, in ms, of `rank`'s last uncaptured call once
  // asynctp::synchronize has returned for it: from where the rank's own work
  // begins to where it is joined back on its stream. It begins after the
  // wait for the rank's previous call (and, with serialize_ranks, for the
  // ranks before it) and after Link::arrival's set-up (placing the peer
  // chunks, clearing its clock's words), which stands in for the transfer
  // the release times model; it ends before the stream waits for the peers
  // to finish reading this rank's shard. With serialize_ranks this is what
  // the call takes on a GPU of its own. Throws Error(invalid_argument)
  // naming the rank when it has no such call.
  double last_call_ms(int rank) const;

  // RankGroup's, by the loopback's rule: per iteration, the mean over ranks
  // of each rank's own call span (as last_call_ms measures it). With
  // serialize_ranks each call runs as if its rank had the GPU alone, so the
  // spans are what W ranks on W GPUs would each take, without the gaps
  // between one virtual rank's call and the next that a real rank never
  // waits through. The iterations run back to back, each rank's calls
  // waited for after every 64 and after the last (not after each: the next
  // call would then start on an idle device, and its span would hold the
  // host's enqueue of it); `before` gets no time of the previous iteration.
  std::vector<double> time_calls(int iterations, const RankCall& call,
                                 const BeforeIteration& before = {},
                                 const std::vector<void*>& streams = {}) override;

 private:
  void enter_rank_thread(int rank) override;

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace asynctp::loopback
