#include "core/device_timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"

namespace asynctp::core {
namespace {

constexpr std::uint64_t kNeverStarted = std::numeric_limits<std::uint64_t>::max();

std::string number(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorCode::invalid_argument, "device timeline: " + what);
}

}  // namespace

const char* device_lane_name(DeviceLane lane) {
  switch (lane) {
    case DeviceLane::stream:
      return "device stream";
    case DeviceLane::copy_out:
      return "device copy out";
    case DeviceLane::copy_in:
      return "device copy in";
    case DeviceLane::compute:
      return "device compute";
    case DeviceLane::lane2:
      return "device lane 2";
  }
  return "device";
}

std::string kernel_chunk_lane(int chunk) {
  return "device tiles: chunk " + std::to_string(chunk);
}

Alignment align_device_clock(const std::vector<DeviceRecord::Mark>& marks,
                             const DeviceTimes& times) {
  const std::vector<double>& mark_ms = times.mark_ms;
  require(!marks.empty(), "no marks to align");
  require(marks.size() == mark_ms.size(), "marks (" + std::to_string(marks.size()) +
                                              ") and their device times (" +
                                              std::to_string(mark_ms.size()) + ") differ");
  double lower = -std::numeric_limits<double>::infinity();
  double last_us = 0;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const double device_us = mark_ms[i] * 1000.0;
    lower = std::max(lower, marks[i].host_before_us - device_us);
    last_us = std::max(last_us, device_us);
  }
  double upper = times.host_done_us - last_us;
  if (times.probe) {
    const double device_us = times.probe->device_ms * 1000.0;
    lower = std::max(lower, times.probe->host_before_us - device_us);
    upper = std::min(upper, times.probe->host_seen_us - device_us);
  }
  // Clocks that disagree (the upper bound below the lower one) leave no
  // interval: the error is then reported as 0, the origin kept at the lower
  // bound.
  return {lower, std::max(0.0, upper - lower)};
}

KernelAlignment align_kernel_stamps(const DeviceRecord::Kernel& kernel,
                                    const std::vector<std::uint64_t>& stamps, double begin_us,
                                    double end_us) {
  const int n = kernel.kernel_chunks();
  require(stamps.size() == static_cast<std::size_t>(2 * n),
          "the kernel has " + std::to_string(n) + " chunks, so " + std::to_string(2 * n) +
              " stamps, not " + std::to_string(stamps.size()));
  KernelAlignment out;
  std::uint64_t first = kNeverStarted, last = 0;
  for (int c = 0; c < n; ++c) {
    const std::uint64_t start = stamps[static_cast<std::size_t>(c)];
    const std::uint64_t end = stamps[static_cast<std::size_t>(n + c)];
    if (start == kNeverStarted || end == 0) continue;
    first = std::min(first, start);
    last = std::max(last, end);
  }
  if (first == kNeverStarted) return out;
  out.origin_ns = first;
  out.origin_us = begin_us;
  const double stamped_us = static_cast<double>(last - std::min(first, last)) / 1000.0;
  out.error_bound_us = std::max(0.0, (end_us - begin_us) - stamped_us);
  for (int chunk = 0; chunk < kernel.chunks; ++chunk) {
    bool stamped = true;
    for (int j = 0; j < kernel.pieces; ++j) {
      const int c = chunk * kernel.pieces + j;
      stamped = stamped && stamps[static_cast<std::size_t>(c)] != kNeverStarted &&
                stamps[static_cast<std::size_t>(n + c)] != 0;
    }
    if (stamped) ++out.stamped_chunks;
  }
  return out;
}

Alignment write_device_timeline(const DeviceRecord& record, const DeviceTimes& times,
                                Trace& trace) {
  const Alignment clock = align_device_clock(record.marks, times);
  auto at = [&](int mark) {
    require(mark >= 0 && static_cast<std::size_t>(mark) < record.marks.size(),
            "mark " + std::to_string(mark) + " was never recorded");
    return clock.origin_us + times.mark_ms[static_cast<std::size_t>(mark)] * 1000.0;
  };
  const int rank = record.rank;
  trace.add_instant(rank, device_lane_name(DeviceLane::stream), "clock", "device clock aligned",
                    at(0),
                    "\"error_bound_us\": " + number(clock.error_bound_us) +
                        ", \"rule\": \"earliest origin the clocks allow\"");
  for (const DeviceRecord::Span& s : record.spans) {
    trace.add_span(rank, device_lane_name(s.lane), s.category, s.name, at(s.begin), at(s.end),
                   s.args_json);
  }
  for (const DeviceRecord::Instant& i : record.instants) {
    trace.add_instant(rank, device_lane_name(i.lane), i.category, i.name, at(i.at), i.args_json);
  }
  if (!record.kernel || times.stamps.empty()) return clock;
  const DeviceRecord::Kernel& k = *record.kernel;
  const KernelAlignment stamps = align_kernel_stamps(k, times.stamps, at(k.begin), at(k.end));
  const int n = k.kernel_chunks();
  for (int chunk : k.order) {
    require(chunk >= 0 && chunk < k.chunks, "chunk " + std::to_string(chunk) + " out of range");
    std::uint64_t first = kNeverStarted, last = 0;
    bool stamped = true;
    for (int j = 0; j < k.pieces; ++j) {
      const auto c = static_cast<std::size_t>(chunk * k.pieces + j);
      const std::uint64_t start = times.stamps[c];
      const std::uint64_t end = times.stamps[static_cast<std::size_t>(n) + c];
      stamped = stamped && start != kNeverStarted && end != 0;
      first = std::min(first, start);
      last = std::max(last, end);
    }
    if (!stamped) continue;
    trace.add_span(rank, kernel_chunk_lane(chunk), "gemm",
                   "chunk " + std::to_string(chunk) + " tiles",
                   stamps.trace_us(first), stamps.trace_us(last),
                   "\"chunk\": " + std::to_string(chunk) +
                       ", \"stamp_alignment_error_bound_us\": " + number(stamps.error_bound_us));
  }
  return clock;
}

}  // namespace asynctp::core
