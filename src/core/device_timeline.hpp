// A traced GPU call's device timeline, runtime-free: what the host side
// recorded while it enqueued the call (timed events, "marks", on named
// streams; the spans and instants between them; a native kernel's tile
// stamps) and, once the device has run it, the conversion of the measured
// times into Trace spans on the host's clock. The GPU side
// (gpu/device_trace.hpp) records the events and reads them back; everything
// that can be checked without a GPU lives here.
//
// Two clocks are put on the trace's (the host's steady clock):
// - Event times. The runtime only gives the time between two events, so
//   each mark's device time d_i is taken from mark 0. The host reads its
//   clock h_i just before it records mark i; the device cannot pass a mark
//   before it was recorded, so the device clock's origin T0 (the trace time
//   of mark 0) satisfies T0 >= h_i - d_i for every i, and the host saw the
//   call complete at h_done, so T0 <= h_done - d_last. A probe after the
//   call (an event recorded on an idle stream at host time p_before and
//   seen complete, by polling without sleep, at p_seen) bounds it from both
//   sides: p_before - d_p <= T0 <= p_seen - d_p. The rule: T0 = the largest
//   lower bound (the earliest origin the clocks allow), exact when some
//   mark ran as soon as it was enqueued (the traced call's first mark, on a
//   device that was idle). Its error is at most the smallest upper bound
//   less T0 (about p_seen - p_before, a few microseconds, when the probe
//   ran), reported with the call (Alignment::error_bound_us), plus the
//   event timer's resolution (about half a microsecond).
// - Tile stamps (the kernel's %globaltimer, ns, a clock of its own). The
//   earliest tile start is put at the kernel's begin mark, so every stamp
//   is early by the kernel's launch latency and first prologue, at most the
//   kernel span's length less the stamps' (KernelAlignment); the stamps are
//   as fine as the GPU's %globaltimer (it ticks every microsecond on some).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace asynctp {
class Trace;
}

namespace asynctp::core {

// The stream a device span ran on, named as its trace lane.
enum class DeviceLane { stream, copy_out, copy_in, compute, lane2 };
const char* device_lane_name(DeviceLane lane);

// The lane of a native kernel's chunk `chunk` (its first to last tile).
std::string kernel_chunk_lane(int chunk);

struct DeviceRecord {
  struct Mark {
    double host_before_us = 0;  // the trace's clock just before the event was recorded
  };
  struct Span {
    DeviceLane lane = DeviceLane::stream;
    std::string category, name, args_json;
    int begin = 0, end = 0;  // marks
  };
  struct Instant {
    DeviceLane lane = DeviceLane::stream;
    std::string category, name, args_json;
    int at = 0;  // mark
  };
  // A native kernel's tile stamps: kernel_chunks() chunks of the launch
  // (an all-gather's signal pieces), `pieces` of them to one chunk of the
  // trace; stamps [c] first tile start, [kernel_chunks() + c] last tile end.
  struct Kernel {
    int begin = 0, end = 0;  // marks around the launch
    int chunks = 0;          // the trace's chunks (ranks)
    int pieces = 1;          // kernel chunks per chunk
    // The chunks in the kernel scheduler's order (their lanes appear in it).
    std::vector<int> order;
    int kernel_chunks() const { return chunks * pieces; }
  };

  int rank = 0;
  std::vector<Mark> marks;
  std::vector<Span> spans;
  std::vector<Instant> instants;
  std::optional<Kernel> kernel;

  bool empty() const { return marks.empty(); }
};

// An event recorded after the call on an idle stream, timed from both
// clocks (see the top).
struct ClockProbe {
  double host_before_us = 0;  // the trace's clock just before it was recorded
  double host_seen_us = 0;    // ... once it was seen complete
  double device_ms = 0;       // its device time, ms since mark 0
};

// What the device measured for a record.
struct DeviceTimes {
  std::vector<double> mark_ms;        // per mark: ms since mark 0 (mark 0: 0)
  std::vector<std::uint64_t> stamps;  // the kernel's, 2 * kernel_chunks() (or none)
  double host_done_us = 0;            // the trace's clock once the call was seen complete
  std::optional<ClockProbe> probe;    // none when the probe did not complete in time
};

struct Alignment {
  double origin_us = 0;       // the trace time of mark 0
  double error_bound_us = 0;  // how far the true origin may be later (see top)
};

// The rule at the top; throws Error(invalid_argument) when the sizes differ
// or there is no mark.
Alignment align_device_clock(const std::vector<DeviceRecord::Mark>& marks,
                             const DeviceTimes& times);

struct KernelAlignment {
  // A stamp's trace time is origin_us + (ns - origin_ns) / 1000: the
  // difference taken in integers first, because %globaltimer counts from
  // the epoch (about 1.7e18 ns), where a double is only as fine as 0.25 us.
  std::uint64_t origin_ns = 0;  // the earliest tile start
  double origin_us = 0;         // its trace time: the kernel's begin mark
  double error_bound_us = 0;    // kernel span less stamp span (>= 0)
  int stamped_chunks = 0;       // chunks with both stamps written

  double trace_us(std::uint64_t ns) const {
    return ns >= origin_ns ? origin_us + static_cast<double>(ns - origin_ns) / 1000.0
                           : origin_us - static_cast<double>(origin_ns - ns) / 1000.0;
  }
};

// The kernel's begin mark at `begin_us` and end mark at `end_us` (trace
// time); a chunk whose stamps were never written (all ones / zero: no tile,
// or a kernel without stamps) is skipped.
KernelAlignment align_kernel_stamps(const DeviceRecord::Kernel& kernel,
                                    const std::vector<std::uint64_t>& stamps, double begin_us,
                                    double end_us);

// Adds the record's spans and instants to `trace` on the record's rank, on
// lanes named by stream (device_lane_name) and, for a kernel with stamps,
// one span per stamped chunk ("chunk c tiles", first tile start to last
// tile end, on kernel_chunk_lane(c)), in the scheduler's order. Throws
// Error(invalid_argument) when times do not match the record.
Alignment write_device_timeline(const DeviceRecord& record, const DeviceTimes& times,
                                Trace& trace);

}  // namespace asynctp::core
