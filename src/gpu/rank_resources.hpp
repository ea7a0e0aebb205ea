// A virtual rank's own device resources, made once and reused by every call:
// side streams, per-chunk events, signal flags, error words, the gathered
// workspace, the pinned bounce buffer of the PCIe link and
// the arrival clock (made on first use). The GEMM's own state (cuBLAS or
// hipBLAS handles) is the rank's RankBackend's (gpu/rank_backend.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/signals.hpp"
#include "gpu/arrival_clock.hpp"
#include "gpu/device_trace.hpp"
#include "gpu/resources.hpp"

namespace asynctp::gpu {

struct RankResources {
  explicit RankResources(int world_size);

  // Made in this order, one after another: the runtime hands streams to hardware
  // queues round-robin, so with 4 or more queues (the default is 8) the GEMM
  // never sits in the queue of the producer stream whose waits it would then
  // be stuck behind. (Sharing would stay correct, the producer being
  // enqueued first, but would serialize copies and GEMM.)
  Stream copy_in;   // bounce -> gathered (host to device), waits, signal writes
  Stream compute;   // the GEMM (native kernel; pipelined lane 1; decomposed)
  Stream lane2;     // pipelined: the second GEMM lane
  Stream copy_out;  // PCIe link: peer shard -> pinned bounce (device to host)
  Event fork, copy_out_done, copy_in_done, compute_done, lane2_done, call_done;
  // The last uncaptured call's own work on its stream: begins after the
  // wait for the rank's previous call (and the ranks before it when
  // serialized) and the arrival model's set-up; ends once joined.
  Event call_begin;
  Event call_end;
  bool call_end_recorded = false;
  // The measured choice's clocks (Transport::time_next_call): a begin and
  // end pair per slot, recorded beside call_begin and call_end by the call
  // the slot is armed for, so that several measuring calls can run back to
  // back before their times are read. Made on first use.
  struct TimedSpan {
    Event begin{"event create", /*timed=*/true};
    Event end{"event create", /*timed=*/true};
    bool recorded = false;
  };
  std::vector<std::unique_ptr<TimedSpan>> timed;
  // The slots the next uncaptured call records its span into (a measuring
  // call's, a timed iteration's).
  std::vector<int> armed_slots;
  std::vector<std::unique_ptr<Event>> staged;   // per signal piece: in the bounce buffer
  std::vector<std::unique_ptr<Event>> arrived;  // per chunk: in gathered, signalled
  DeviceMemory flags;              // a flag per signal piece of every chunk (epoch protocol)
  core::FlagResetRule flag_reset;  // when epoch-fresh flags need zeroing (every op's epochs)
  DeviceMemory error_words;        // 3 words the native kernel's gate fills on a timeout
  DeviceMemory gathered;           // used when the caller wants no gathered A back
  PinnedMemory bounce;
  // fused_matmul_reduce_scatter (gpu/reduce_scatter_enqueue.hpp): this
  // rank's partial product, its W - 1 receive slots and their flags (epoch
  // protocol, zeroed when allocated; the arrival link's model releases them
  // too), a chunk's GEMM done, and the last reduction (after which the peers
  // may write the slots again).
  DeviceMemory partial;
  DeviceMemory slots;
  DeviceMemory slot_flags;
  DeviceMemory reduce_sum;      // m x n fp32: the reduction's sum between runs of slots
  DeviceMemory reduce_verdict;  // 1 word: every slot landed by the reduction's first wait
  // The native reduce-scatter grid's tile count per chunk piece (W x
  // kMaxSignalPieces words): zeroed when made, and every launch leaves them
  // 0 (a piece's last tile resets its counter), so no call zeroes them.
  // Apart from `flags`, which other ops' calls leave holding epochs.
  DeviceMemory tile_counters;
  std::vector<std::unique_ptr<Event>> computed;  // per chunk
  Event reduced;
  std::unique_ptr<ArrivalClock> clock;
  // A traced call's device timeline (off unless the transport started it).
  DeviceTrace trace;

  // Signal piece `piece`'s flag (chunk c's piece j is c * pieces + j).
  std::uint32_t* flag(int piece) const { return static_cast<std::uint32_t*>(flags.get()) + piece; }
  // A call's bounds on its stream: it starts after this rank's previous
  // call (whose workspace, flags and clock it reuses) and records where it
  // ends. Inside a capture stream order is the caller's, and waiting on an
  // event recorded outside the capture is not allowed: both do nothing.
  void wait_previous_call(rt::StreamHandle stream, bool capturing);
  void record_call_begin(rt::StreamHandle stream, bool capturing);
  void record_call_end(rt::StreamHandle stream, bool capturing);
  // A slot the next uncaptured call records its span into (made if new).
  void arm_timed_span(int slot);
};

}  // namespace asynctp::gpu
