// The trace recorder: thread-safe recording from every lane, and a Chrome
// trace ("traceEvents") with one process per rank and one named thread per
// lane, so the overlap of copies and GEMM can be inspected in Perfetto.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"
#include "support/json_check.hpp"

namespace asynctp {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

TEST(Trace, RecordsFromManyThreads) {
  Trace trace;
  constexpr int kThreads = 4, kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const double begin = trace.now_us();
        trace.add_span(t % 2, "lane " + std::to_string(t), "gemm", "span", begin,
                       trace.now_us(), "\"i\": " + std::to_string(i));
        trace.add_instant(t % 2, "lane " + std::to_string(t), "signal", "instant",
                          trace.now_us());
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto events = trace.events();
  ASSERT_EQ(events.size(), static_cast<std::size_t>(kThreads * kEach * 2));
  std::vector<int> per_lane(kThreads, 0);
  int spans = 0;
  for (const auto& e : events) {
    const int lane = std::stoi(e.lane.substr(5));
    ASSERT_GE(lane, 0);
    ASSERT_LT(lane, kThreads);
    ++per_lane[static_cast<std::size_t>(lane)];
    EXPECT_EQ(e.rank, lane % 2);
    if (e.duration_us >= 0) ++spans;
  }
  for (int n : per_lane) EXPECT_EQ(n, 2 * kEach);
  EXPECT_EQ(spans, kThreads * kEach);
  trace.clear();
  EXPECT_TRUE(trace.events().empty());
}

TEST(Trace, SpanAndInstantFields) {
  Trace trace;
  trace.add_span(2, "producer", "copy", "copy chunk 1", 10.0, 25.5, "\"chunk\": 1");
  trace.add_instant(2, "producer", "signal", "signal chunk 1", 25.5);
  trace.add_span(2, "gemm worker 0", "gemm", "backwards", 40.0, 30.0);  // clamped, not an instant
  const auto events = trace.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "copy chunk 1");
  EXPECT_EQ(events[0].category, "copy");
  EXPECT_EQ(events[0].rank, 2);
  EXPECT_EQ(events[0].lane, "producer");
  EXPECT_DOUBLE_EQ(events[0].begin_us, 10.0);
  EXPECT_DOUBLE_EQ(events[0].duration_us, 15.5);
  EXPECT_EQ(events[0].args_json, "\"chunk\": 1");
  EXPECT_LT(events[1].duration_us, 0);  // instant
  EXPECT_DOUBLE_EQ(events[1].begin_us, 25.5);
  EXPECT_DOUBLE_EQ(events[2].duration_us, 0.0);
}

TEST(Trace, NowIsMonotonic) {
  Trace trace;
  double last = trace.now_us();
  EXPECT_GE(last, 0.0);
  for (int i = 0; i < 1000; ++i) {
    const double now = trace.now_us();
    ASSERT_GE(now, last);
    last = now;
  }
}

TEST(Trace, ChromeJsonHasProcessesThreadsSpansAndInstants) {
  Trace trace;
  trace.add_span(0, "producer", "copy", "copy chunk 1", 1.0, 3.0, "\"chunk\": 1");
  trace.add_instant(0, "producer", "signal", "signal chunk 1", 3.0, "\"chunk\": 1");
  trace.add_span(0, "gemm worker 0", "gemm", "chunk 0", 0.5, 2.5);
  trace.add_span(1, "gemm worker 1", "gemm", "chunk 1", 4.0, 6.0);
  const std::string json = trace.to_chrome_json();
  asynctp_test::JsonChecker checker;
  EXPECT_TRUE(checker.check(json)) << checker.error() << "\n" << json;
  EXPECT_TRUE(contains(json, "\"traceEvents\"")) << json;
  EXPECT_TRUE(contains(json, "\"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": \"rank 0\"}")) << json;
  EXPECT_TRUE(contains(json, "\"args\": {\"name\": \"rank 1\"}")) << json;
  EXPECT_EQ(count(json, "\"process_name\""), 2);
  EXPECT_EQ(count(json, "\"thread_name\""), 3);  // (0, producer), (0, worker 0), (1, worker 1)
  EXPECT_TRUE(contains(json, "\"args\": {\"name\": \"producer\"}")) << json;
  EXPECT_TRUE(contains(json, "\"args\": {\"name\": \"gemm worker 0\"}")) << json;
  EXPECT_TRUE(contains(json, "\"args\": {\"name\": \"gemm worker 1\"}")) << json;
  EXPECT_EQ(count(json, "\"ph\": \"X\""), 3);
  EXPECT_EQ(count(json, "\"ph\": \"i\""), 1);
  EXPECT_TRUE(contains(json, "\"ts\": 1.000, \"ph\": \"X\", \"dur\": 2.000")) << json;
  EXPECT_TRUE(contains(json, "\"ph\": \"i\", \"s\": \"t\"")) << json;
  EXPECT_TRUE(contains(json, "\"args\": {\"chunk\": 1}")) << json;
  EXPECT_TRUE(contains(json, "\"cat\": \"copy\"")) << json;
}

TEST(Trace, ChromeJsonEscapesNames) {
  Trace trace;
  trace.add_span(0, "lane \"q\"\\", "c\tat", "name \"with\" quotes\nand\x01", 0, 1);
  const std::string json = trace.to_chrome_json();
  asynctp_test::JsonChecker checker;
  EXPECT_TRUE(checker.check(json)) << checker.error() << "\n" << json;
  EXPECT_TRUE(contains(json, "name \\\"with\\\" quotes\\nand\\u0001")) << json;
  EXPECT_TRUE(contains(json, "lane \\\"q\\\"\\\\")) << json;
  // An empty trace is still a valid document.
  EXPECT_TRUE(checker.check(Trace().to_chrome_json())) << checker.error();
}

TEST(Trace, WriteChromeJson) {
  Trace trace;
  trace.add_span(0, "producer", "copy", "copy chunk 0", 0, 1);
  const std::string path = ::testing::TempDir() + "asynctp_trace_test.json";
  trace.write_chrome_json(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), trace.to_chrome_json());
  std::remove(path.c_str());
}

TEST(Trace, WriteToUnwritablePathNamesThePath) {
  Trace trace;
  trace.add_instant(0, "producer", "signal", "x", 0);
  const std::string path = "/nonexistent/dir/x.json";
  try {
    trace.write_chrome_json(path);
    ADD_FAILURE() << "wrote to " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
    EXPECT_TRUE(contains(e.what(), "cannot open for writing")) << e.what();
  }
}

}  // namespace
}  // namespace asynctp
