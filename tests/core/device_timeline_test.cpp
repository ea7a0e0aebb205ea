// A traced GPU call's device timeline turned into trace spans, without a
// GPU: the clock alignment and its error bound, the lanes named by stream,
// the kernel's tile stamps merged per chunk and put on the event clock, and
// the Chrome JSON they make.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"
#include "core/device_timeline.hpp"
#include "support/json_check.hpp"

namespace asynctp::core {
namespace {

constexpr std::uint64_t kUnset = std::numeric_limits<std::uint64_t>::max();

std::vector<DeviceRecord::Mark> marks_at(std::vector<double> host_before_us) {
  std::vector<DeviceRecord::Mark> marks;
  for (double h : host_before_us) marks.push_back({h});
  return marks;
}

const Trace::Event* find(const std::vector<Trace::Event>& events, const std::string& name) {
  for (const Trace::Event& e : events) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

TEST(DeviceTimeline, OriginIsTheLargestLowerBoundOfTheMarks) {
  DeviceTimes times;
  times.mark_ms = {0, 0.002, 0.050};
  times.host_done_us = 260;
  // Lower bounds: 100 - 0, 105 - 2, 200 - 50: the third mark ran late
  // relative to the first, so the origin is 150, not 100.
  const Alignment a = align_device_clock(marks_at({100, 105, 200}), times);
  EXPECT_DOUBLE_EQ(a.origin_us, 150);
  // Upper bound: seen done at 260, the last mark 50 us after the origin.
  EXPECT_DOUBLE_EQ(a.error_bound_us, 60);
}

TEST(DeviceTimeline, ProbeTightensBothBounds) {
  DeviceTimes times;
  times.mark_ms = {0, 0.050};
  times.host_done_us = 400;
  times.probe = ClockProbe{300, 304, 0.148};
  const Alignment a = align_device_clock(marks_at({100, 120}), times);
  EXPECT_DOUBLE_EQ(a.origin_us, 152);  // 300 - 148 beats 100 and 70
  EXPECT_NEAR(a.error_bound_us, 4, 1e-9);  // 304 - 148 - 152
}

TEST(DeviceTimeline, ClocksThatDisagreeReportNoError) {
  DeviceTimes times;
  times.mark_ms = {0, 0.1};
  times.host_done_us = 50;  // before the last mark could have run
  const Alignment a = align_device_clock(marks_at({10, 20}), times);
  EXPECT_DOUBLE_EQ(a.origin_us, 10);
  EXPECT_DOUBLE_EQ(a.error_bound_us, 0);
}

TEST(DeviceTimeline, MismatchedTimesAreRejected) {
  DeviceTimes times;
  times.mark_ms = {0};
  EXPECT_THROW(align_device_clock(marks_at({1, 2}), times), Error);
  EXPECT_THROW(align_device_clock({}, DeviceTimes{}), Error);
}

TEST(DeviceTimeline, LanesAreNamedByStream) {
  EXPECT_STREQ(device_lane_name(DeviceLane::stream), "device stream");
  EXPECT_STREQ(device_lane_name(DeviceLane::copy_out), "device copy out");
  EXPECT_STREQ(device_lane_name(DeviceLane::copy_in), "device copy in");
  EXPECT_STREQ(device_lane_name(DeviceLane::compute), "device compute");
  EXPECT_STREQ(device_lane_name(DeviceLane::lane2), "device lane 2");
  EXPECT_EQ(kernel_chunk_lane(3), "device tiles: chunk 3");
}

// A pcie all-gather of 2 ranks as rank 1 records it: the call, one peer
// chunk's copies and signal, the GEMM.
DeviceRecord copy_and_gemm_record() {
  DeviceRecord r;
  r.rank = 1;
  r.marks = marks_at({1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008});
  r.spans.push_back({DeviceLane::copy_out, "copy", "to pinned host: chunk 0", "\"chunk\": 0", 1, 2});
  r.spans.push_back({DeviceLane::copy_in, "copy", "to gathered: chunk 0", "\"chunk\": 0", 3, 4});
  r.instants.push_back({DeviceLane::copy_in, "signal", "signal chunk 0", "\"chunk\": 0", 5});
  r.spans.push_back({DeviceLane::compute, "gemm", "GEMM chunk 0", "", 6, 7});
  r.spans.push_back({DeviceLane::stream, "call", "all-gather + matmul", "", 0, 8});
  return r;
}

TEST(DeviceTimeline, SpansAndInstantsLandOnTheirLanesAtTheirDeviceTimes) {
  const DeviceRecord r = copy_and_gemm_record();
  DeviceTimes times;
  times.mark_ms = {0, 0.010, 0.110, 0.110, 0.210, 0.211, 0.211, 0.500, 0.501};
  times.host_done_us = 1600;
  Trace trace;
  const Alignment a = write_device_timeline(r, times, trace);
  EXPECT_DOUBLE_EQ(a.origin_us, 1000);  // mark 0 ran as soon as it was enqueued
  EXPECT_NEAR(a.error_bound_us, 1600 - 501 - 1000, 1e-9);
  const std::vector<Trace::Event> events = trace.events();
  for (const Trace::Event& e : events) EXPECT_EQ(e.rank, 1) << e.name;

  // name, lane, begin, duration (< 0: an instant) on the host's clock.
  struct Expected {
    const char* name;
    const char* lane;
    double begin_us, duration_us;
  };
  const Expected expected[] = {
      {"to pinned host: chunk 0", "device copy out", 1010, 100},
      {"to gathered: chunk 0", "device copy in", 1110, 100},
      {"signal chunk 0", "device copy in", 1211, -1},
      {"GEMM chunk 0", "device compute", 1211, 289},
      {"all-gather + matmul", "device stream", 1000, 501},
  };
  for (const Expected& x : expected) {
    SCOPED_TRACE(x.name);
    const Trace::Event* e = find(events, x.name);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->lane, x.lane);
    EXPECT_NEAR(e->begin_us, x.begin_us, 1e-9);
    if (x.duration_us < 0) {
      EXPECT_LT(e->duration_us, 0);
    } else {
      EXPECT_NEAR(e->duration_us, x.duration_us, 1e-9);
    }
  }
  const Trace::Event* out = find(events, "to pinned host: chunk 0");
  EXPECT_EQ(out->category, "copy");
  EXPECT_EQ(out->args_json, "\"chunk\": 0");

  const Trace::Event* aligned = find(events, "device clock aligned");
  ASSERT_NE(aligned, nullptr);
  EXPECT_NE(aligned->args_json.find("\"error_bound_us\": 99.000"), std::string::npos)
      << aligned->args_json;
  EXPECT_EQ(events.size(), 6u);  // 4 spans, 1 instant, the alignment
}

TEST(DeviceTimeline, AMarkNeverRecordedIsRejected) {
  DeviceRecord r = copy_and_gemm_record();
  r.spans.push_back({DeviceLane::compute, "gemm", "bad", "", 2, 9});
  DeviceTimes times;
  times.mark_ms.assign(r.marks.size(), 0);
  Trace trace;
  EXPECT_THROW(write_device_timeline(r, times, trace), Error);
}

// A native kernel of 4 chunks in 2 signal pieces each, begun at mark 1 and
// ended at mark 2, the scheduler starting at chunk 2.
DeviceRecord kernel_record() {
  DeviceRecord r;
  r.rank = 2;
  r.marks = marks_at({0, 1, 2});
  r.spans.push_back({DeviceLane::compute, "gemm", "native GEMM k", "", 1, 2});
  DeviceRecord::Kernel k;
  k.begin = 1;
  k.end = 2;
  k.chunks = 4;
  k.pieces = 2;
  k.order = {2, 3, 0, 1};
  r.kernel = k;
  return r;
}

// Stamps in ns on the kernel's own clock (origin t0, by default 5'000'000
// ns): [c] first tile start of kernel chunk c (= chunk c / 2, piece c % 2),
// [8 + c] last end.
std::vector<std::uint64_t> kernel_stamps(std::uint64_t t0 = 5'000'000) {
  std::vector<std::uint64_t> s(16);
  // chunk 2 (kernel chunks 4, 5) starts first, at t0 + 3 us
  const std::uint64_t start[8] = {t0 + 40'000, t0 + 41'000, t0 + 60'000, t0 + 61'000,
                                  t0 + 3'000,  t0 + 4'000,  t0 + 20'000, t0 + 22'000};
  const std::uint64_t end[8] = {t0 + 58'000, t0 + 59'000, t0 + 80'000, t0 + 83'000,
                                t0 + 18'000, t0 + 19'500, t0 + 38'000, t0 + 39'000};
  for (int c = 0; c < 8; ++c) {
    s[static_cast<std::size_t>(c)] = start[c];
    s[static_cast<std::size_t>(8 + c)] = end[c];
  }
  return s;
}

// The trace's native chunk spans ("device tiles: chunk c" lanes), in order.
std::vector<Trace::Event> chunk_spans(const Trace& trace) {
  std::vector<Trace::Event> chunks;
  for (const Trace::Event& e : trace.events()) {
    if (e.lane.rfind("device tiles: chunk ", 0) == 0) chunks.push_back(e);
  }
  return chunks;
}

TEST(DeviceTimeline, TileStampsBecomeOneSpanPerChunkInSchedulerOrder) {
  const DeviceRecord r = kernel_record();
  DeviceTimes times;
  times.mark_ms = {0, 0.010, 0.100};  // the kernel: 10 us to 100 us after mark 0
  times.stamps = kernel_stamps();
  times.host_done_us = 1000;
  Trace trace;
  write_device_timeline(r, times, trace);

  const std::vector<Trace::Event> chunks = chunk_spans(trace);
  ASSERT_EQ(chunks.size(), 4u);
  const int expected_order[4] = {2, 3, 0, 1};
  // Earliest start (chunk 2, +3 us on its clock) is put at the kernel's
  // begin mark (10 us): the stamps' offset is +7 us against their clock.
  const double first_us[4] = {10, 27, 47, 67};
  const double last_us[4] = {26.5, 46, 66, 90};
  for (int i = 0; i < 4; ++i) {
    const Trace::Event& e = chunks[static_cast<std::size_t>(i)];
    const int c = expected_order[i];
    EXPECT_EQ(e.name, "chunk " + std::to_string(c) + " tiles");
    EXPECT_EQ(e.lane, kernel_chunk_lane(c));
    EXPECT_EQ(e.category, "gemm");
    EXPECT_EQ(e.rank, 2);
    EXPECT_NEAR(e.begin_us, first_us[i], 1e-6) << e.name;
    EXPECT_NEAR(e.begin_us + e.duration_us, last_us[i], 1e-6) << e.name;
    // Kernel span 90 us, stamps span 80 us: the start may be 10 us early.
    EXPECT_NE(e.args_json.find("\"stamp_alignment_error_bound_us\": 10.000"), std::string::npos)
        << e.args_json;
  }
}

// %globaltimer counts ns from the epoch (about 1.7e18 now), and host trace
// times are seconds into a process (millions of us): a double holds neither
// difference to better than a quarter of a microsecond unless the stamps are
// subtracted as integers first. The earliest chunk must start exactly at the
// kernel's begin mark, never before it.
TEST(DeviceTimeline, EpochScaleStampsKeepTheirMicroseconds) {
  const DeviceRecord r = kernel_record();
  DeviceTimes times;
  times.mark_ms = {0, 0.010, 0.100};
  times.stamps = kernel_stamps(1'733'371'234'567'891'123ull);
  times.host_done_us = 2'616'560'000.0 + 1000;
  times.probe = ClockProbe{2'616'560'000.0 + 900, 2'616'560'000.0 + 900.5, 0.9};
  Trace trace;
  write_device_timeline(r, times, trace);
  const double kernel_begin = 2'616'560'000.0 + 10;
  const std::vector<Trace::Event> chunks = chunk_spans(trace);
  ASSERT_EQ(chunks.size(), 4u);
  const double first_us[4] = {0, 17, 37, 57};
  const double last_us[4] = {16.5, 36, 56, 80};
  for (int i = 0; i < 4; ++i) {
    const Trace::Event& e = chunks[static_cast<std::size_t>(i)];
    EXPECT_GE(e.begin_us, kernel_begin) << e.name;
    EXPECT_NEAR(e.begin_us - kernel_begin, first_us[i], 1e-6) << e.name;
    EXPECT_NEAR(e.begin_us + e.duration_us - kernel_begin, last_us[i], 1e-6) << e.name;
  }
}

TEST(DeviceTimeline, UnstampedChunksAreLeftOut) {
  const DeviceRecord r = kernel_record();
  DeviceTimes times;
  times.mark_ms = {0, 0.010, 0.100};
  times.stamps = kernel_stamps();
  times.stamps[1] = kUnset;  // chunk 0's second piece never started a tile
  times.host_done_us = 1000;
  Trace trace;
  write_device_timeline(r, times, trace);
  int chunk_spans = 0;
  for (const Trace::Event& e : trace.events()) {
    if (e.lane.rfind("device tiles: ", 0) == 0) {
      ++chunk_spans;
      EXPECT_NE(e.name, "chunk 0 tiles");
    }
  }
  EXPECT_EQ(chunk_spans, 3);

  // A kernel that never stamps (the HIP kernel): the kernel span alone.
  std::vector<std::uint64_t> none(16, 0);
  for (int c = 0; c < 8; ++c) none[static_cast<std::size_t>(c)] = kUnset;
  const KernelAlignment k = align_kernel_stamps(*r.kernel, none, 10, 100);
  EXPECT_EQ(k.stamped_chunks, 0);
  Trace bare;
  times.stamps = none;
  write_device_timeline(r, times, bare);
  for (const Trace::Event& e : bare.events()) {
    EXPECT_EQ(e.lane.rfind("device tiles: ", 0), std::string::npos) << e.lane;
  }
}

TEST(DeviceTimeline, StampCountMustMatchTheKernel) {
  const DeviceRecord r = kernel_record();
  EXPECT_THROW(align_kernel_stamps(*r.kernel, std::vector<std::uint64_t>(15, 1), 0, 1), Error);
}

TEST(DeviceTimeline, WritesValidChromeJsonWithDeviceLanes) {
  Trace trace;
  trace.add_span(1, "host enqueue", "call", "check, agree and enqueue (native)", 900, 990);
  DeviceTimes times;
  times.mark_ms = {0, 0.010, 0.110, 0.110, 0.210, 0.211, 0.211, 0.500, 0.501};
  times.host_done_us = 1600;
  write_device_timeline(copy_and_gemm_record(), times, trace);
  const std::string json = trace.to_chrome_json();
  asynctp_test::JsonChecker checker;
  EXPECT_TRUE(checker.check(json)) << checker.error();
  for (const char* lane : {"host enqueue", "device copy out", "device copy in", "device compute",
                           "device stream"}) {
    EXPECT_NE(json.find(std::string("\"args\": {\"name\": \"") + lane + "\"}"), std::string::npos)
        << lane;
  }
}

}  // namespace
}  // namespace asynctp::core
