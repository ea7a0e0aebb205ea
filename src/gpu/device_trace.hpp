// The device side of a traced call (Options::trace), for either runtime:
// timed events ("marks") recorded on the call's streams around each copy,
// GEMM and signal as the call is enqueued, a native kernel's tile stamps
// (src/cuda/native/kernel/tile_stamps.cuh), and, once the call has run,
// their times turned into spans of the same Trace (core/device_timeline.hpp
// says how the device's clocks are put on the host's).
//
// Off (every call without a trace, and every captured call): each site is
// one test of on(); no event is recorded, nothing is allocated, and the
// kernel's stamp pointer is null. On, per call: two events per span and one
// per instant, two memsets and two 64-bit atomics per tile for a native
// kernel, and after the call one event query per mark and one copy of 16
// bytes per chunk back to the host.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device_timeline.hpp"
#include "gpu/resources.hpp"
#include "gpu/runtime.hpp"

namespace asynctp {
class Trace;
}

namespace asynctp::gpu {

// What a span or instant is: its category and name, and the chunk (and
// signal piece, when a chunk moves in several) it concerns, if any; the
// name then reads "name c" (or "name c piece j").
struct DeviceWhat {
  const char* category;
  const char* name;
  int chunk = -1;
  int piece = -1;
};

class DeviceTrace {
 public:
  DeviceTrace() = default;
  DeviceTrace(const DeviceTrace&) = delete;
  DeviceTrace& operator=(const DeviceTrace&) = delete;

  // Makes the events and the stamp buffer a call of up to `marks` marks and
  // a kernel of `kernel_chunks` chunks needs. Allocation can wait for the
  // whole device, so a transport whose ranks share one prepares before any
  // rank enqueues. A call that needs more marks makes them as it goes.
  void prepare(int marks, int kernel_chunks);
  // The marks a call of `world` ranks in signal `pieces` per chunk records
  // at most (every op and algorithm).
  static int marks_for(int world, int pieces);

  // Starts recording this rank's next call into `trace` (nullptr: off).
  // A recording not yet collected is collected first, if it has run
  // (collect, with `idle`).
  void start(Trace* trace, int rank, rt::StreamHandle idle);
  bool on() const noexcept { return trace_ != nullptr; }

  // The call's bounds on the caller's stream: its first mark (mark 0, the
  // origin of the device times) and, at its end, a span of the whole call
  // named `op`.
  void begin_call(rt::StreamHandle stream) { (void)mark(stream); }
  void end_call(rt::StreamHandle stream, const char* op) {
    if (on()) add_span(core::DeviceLane::stream, {"call", op}, 0, mark(stream));
  }

  // A timed event on `stream` now, in stream order; -1 when off.
  int mark(rt::StreamHandle stream);
  // `enqueue`'s work on `stream`, between two marks, as a span of `lane`.
  template <typename Enqueue>
  void span(rt::StreamHandle stream, core::DeviceLane lane, const DeviceWhat& what,
            Enqueue&& enqueue) {
    if (!on()) {
      enqueue();
      return;
    }
    const int begin = mark(stream);
    enqueue();
    add_span(lane, what, begin, mark(stream));
  }
  // A span between two marks already recorded (the whole call).
  void add_span(core::DeviceLane lane, const DeviceWhat& what, int begin, int end);
  // The moment `stream` reaches this point (a flag written), on `lane`.
  void instant(rt::StreamHandle stream, core::DeviceLane lane, const DeviceWhat& what);

  // A native kernel's launch on `stream` (by `launch`), as a span of the
  // compute lane with the kernel's tile stamps: `chunks` chunks of
  // `pieces` kernel chunks each, scheduled in `order`. While `launch` runs,
  // kernel_stamps() is the buffer (reset on `stream` just before), else
  // nullptr.
  template <typename Launch>
  void kernel(rt::StreamHandle stream, const std::string& name, int chunks, int pieces,
              std::vector<int> order, Launch&& launch) {
    if (!on()) {
      launch();
      return;
    }
    const int begin = arm_stamps(stream, chunks * pieces);
    launch();
    disarm_stamps(stream, name, begin, chunks, pieces, std::move(order));
  }
  std::uint64_t* kernel_stamps() const noexcept { return armed_ ? stamps_ptr() : nullptr; }

  // Once the recorded call has completed on the device (a bounded wait saw
  // it: asynctp::synchronize), its spans into the trace; a call still
  // running leaves none (this never waits for the call). `idle`, a stream
  // of the rank with nothing queued, carries the clock probe
  // (core::ClockProbe; polled for at most 100 ms). Does nothing when off.
  void collect(rt::StreamHandle idle);
  // Drops the recording (the call failed to enqueue).
  void abandon();

 private:
  int arm_stamps(rt::StreamHandle stream, int kernel_chunks);
  void disarm_stamps(rt::StreamHandle stream, const std::string& name, int begin, int chunks,
                     int pieces, std::vector<int> order);
  std::optional<core::ClockProbe> probe_clock(const Trace& trace, rt::StreamHandle idle);
  std::uint64_t* stamps_ptr() const noexcept {
    return static_cast<std::uint64_t*>(stamps_.get());
  }

  Trace* trace_ = nullptr;
  core::DeviceRecord record_;
  std::vector<std::unique_ptr<Event>> events_;  // timed; events_[i] is mark i
  std::unique_ptr<Event> probe_;                // timed; made at the first collection
  DeviceMemory stamps_;
  bool armed_ = false;
};

}  // namespace asynctp::gpu
