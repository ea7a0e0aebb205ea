// A recorder of timed spans and instants, written as a Chrome trace (JSON
// "traceEvents") that loads in Perfetto or chrome://tracing. One process row
// per rank, one thread row per lane (the producer, each GEMM worker), so the
// overlap of copies and GEMM work can be seen. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace asynctp {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;

  struct Event {
    std::string name;
    std::string category;  // "copy", "signal", "gemm", "reduce", "wait", "call"
    int rank = 0;
    std::string lane;         // e.g. "producer", "gemm worker 0"
    double begin_us = 0;      // since the trace's origin
    double duration_us = -1;  // < 0 marks an instant event
    std::string args_json;    // a JSON object's members, e.g. "\"chunk\": 3"
  };

  Trace();

  double now_us() const;
  void add_span(int rank, const std::string& lane, const std::string& category,
                const std::string& name, double begin_us, double end_us,
                const std::string& args_json = "");
  void add_instant(int rank, const std::string& lane, const std::string& category,
                   const std::string& name, double at_us, const std::string& args_json = "");

  std::vector<Event> events() const;
  void clear();
  std::string to_chrome_json() const;
  // Throws Error naming `path` when the file cannot be written.
  void write_chrome_json(const std::string& path) const;

 private:
  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace asynctp
