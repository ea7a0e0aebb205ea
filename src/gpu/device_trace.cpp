#include "gpu/device_trace.hpp"

#include <string>

#include "asynctp/trace.hpp"
#include "gpu/check.hpp"

namespace asynctp::gpu {
namespace {

std::size_t stamp_bytes(int kernel_chunks) {
  return 2 * sizeof(std::uint64_t) * static_cast<std::size_t>(kernel_chunks);
}

}  // namespace

int DeviceTrace::marks_for(int world, int pieces) {
  // Per signal piece at most two copies (2 marks each) and a signal; per
  // chunk a GEMM or a modelled transfer (2), a wait (2) and a signal; the
  // call's own (its bounds, a kernel, the reduction, the local copy) fit in
  // the constant.
  return world * (5 * pieces + 5) + 16;
}

void DeviceTrace::prepare(int marks, int kernel_chunks) {
  while (static_cast<int>(events_.size()) < marks) {
    events_.push_back(std::make_unique<Event>("event create (trace mark)", /*timed=*/true));
  }
  stamps_.ensure(stamp_bytes(kernel_chunks), "device allocation (tile stamps)");
}

void DeviceTrace::start(Trace* trace, int rank, rt::StreamHandle idle) {
  collect(idle);
  trace_ = trace;
  record_ = core::DeviceRecord{};
  record_.rank = rank;
  armed_ = false;
}

int DeviceTrace::mark(rt::StreamHandle stream) {
  if (!on()) return -1;
  const auto index = record_.marks.size();
  if (index >= events_.size()) {
    events_.push_back(std::make_unique<Event>("event create (trace mark)", /*timed=*/true));
  }
  record_.marks.push_back({trace_->now_us()});
  record(events_[index]->get(), stream, "event record (trace mark)");
  return static_cast<int>(index);
}

namespace {

// Appended piece by piece (GCC 12 misreads `" piece " + std::to_string(j)`
// under -Werror=restrict).
std::string describe(const DeviceWhat& what) {
  std::string name = what.name;
  if (what.chunk >= 0) name.append(" ").append(std::to_string(what.chunk));
  if (what.piece >= 0) name.append(" piece ").append(std::to_string(what.piece));
  return name;
}

std::string args_of(const DeviceWhat& what) {
  std::string args;
  if (what.chunk >= 0) args.append("\"chunk\": ").append(std::to_string(what.chunk));
  if (what.piece >= 0) args.append(", \"piece\": ").append(std::to_string(what.piece));
  return args;
}

}  // namespace

void DeviceTrace::add_span(core::DeviceLane lane, const DeviceWhat& what, int begin, int end) {
  if (!on()) return;
  record_.spans.push_back({lane, what.category, describe(what), args_of(what), begin, end});
}

void DeviceTrace::instant(rt::StreamHandle stream, core::DeviceLane lane, const DeviceWhat& what) {
  if (!on()) return;
  const int at = mark(stream);
  record_.instants.push_back({lane, what.category, describe(what), args_of(what), at});
}

int DeviceTrace::arm_stamps(rt::StreamHandle stream, int kernel_chunks) {
  const std::size_t half = stamp_bytes(kernel_chunks) / 2;
  stamps_.ensure(2 * half, "device allocation (tile stamps)");
  // First tile starts to all ones (atomicMin), last tile ends to 0 (atomicMax).
  check(rt::memset_async(stamps_ptr(), 0xFF, half, stream), "memset (tile stamps)");
  check(rt::memset_async(stamps_ptr() + kernel_chunks, 0, half, stream), "memset (tile stamps)");
  armed_ = true;
  return mark(stream);
}

void DeviceTrace::disarm_stamps(rt::StreamHandle stream, const std::string& name, int begin,
                                int chunks, int pieces, std::vector<int> order) {
  armed_ = false;
  const int end = mark(stream);
  const std::string label = "native GEMM " + name;
  record_.spans.push_back({core::DeviceLane::compute, "gemm", label, "", begin, end});
  core::DeviceRecord::Kernel kernel;
  kernel.begin = begin;
  kernel.end = end;
  kernel.chunks = chunks;
  kernel.pieces = pieces;
  kernel.order = std::move(order);
  record_.kernel = std::move(kernel);
}

// The clock probe of core::DeviceTimes: an event on `idle`, polled without
// sleeping for at most kProbeBound (bounded: a busy hardware queue may hold
// it; the alignment then does without it).
std::optional<core::ClockProbe> DeviceTrace::probe_clock(const Trace& trace,
                                                          rt::StreamHandle idle) {
  constexpr double kProbeBoundUs = 100'000;
  if (!probe_) probe_ = std::make_unique<Event>("event create (trace clock probe)", true);
  core::ClockProbe probe;
  probe.host_before_us = trace.now_us();
  record(probe_->get(), idle, "event record (trace clock probe)");
  rt::Status status = rt::kNotReady;
  while ((status = rt::event_query(probe_->get())) == rt::kNotReady) {
    if (trace.now_us() - probe.host_before_us > kProbeBoundUs) return std::nullopt;
  }
  probe.host_seen_us = trace.now_us();
  check(status, "event query (trace clock probe)");
  float ms = 0;
  check(rt::event_elapsed_ms(&ms, events_[0]->get(), probe_->get()),
        "event elapsed time (trace clock probe)");
  probe.device_ms = static_cast<double>(ms);
  return probe;
}

void DeviceTrace::collect(rt::StreamHandle idle) {
  if (!on()) return;
  Trace& trace = *trace_;
  trace_ = nullptr;  // one collection per recording, whatever happens below
  if (record_.empty()) return;
  const rt::EventHandle first = events_[0]->get();
  // Never a wait here: a call still running (not seen done by a bounded
  // wait) leaves no device spans.
  const rt::Status done = rt::event_query(events_[record_.marks.size() - 1]->get());
  if (done == rt::kNotReady) return;
  check(done, "event query (traced call's last mark)");
  core::DeviceTimes times;
  times.host_done_us = trace.now_us();
  times.mark_ms.reserve(record_.marks.size());
  for (std::size_t i = 0; i < record_.marks.size(); ++i) {
    float ms = 0;
    if (i > 0) {
      check(rt::event_elapsed_ms(&ms, first, events_[i]->get()),
            "event elapsed time (trace mark)");
    }
    times.mark_ms.push_back(static_cast<double>(ms));
  }
  times.probe = probe_clock(trace, idle);
  if (record_.kernel) {
    times.stamps.resize(2 * static_cast<std::size_t>(record_.kernel->kernel_chunks()));
    check(rt::memcpy_blocking(times.stamps.data(), stamps_ptr(),
                              times.stamps.size() * sizeof(std::uint64_t),
                              rt::Copy::device_to_host),
          "copy (tile stamps)");
  }
  core::write_device_timeline(record_, times, trace);
}

void DeviceTrace::abandon() {
  trace_ = nullptr;
  armed_ = false;
}

}  // namespace asynctp::gpu
