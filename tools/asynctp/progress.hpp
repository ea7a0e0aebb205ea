// A progress line on stderr for runs long enough to make a user wonder
// (~1.5 s): rewritten in place on a terminal, plain lines at most every ~2 s
// otherwise (logs and CI). A background thread does the printing, so a status
// set before a long silent step (a float64 reference) still shows up.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace asynctp::tool {

class Progress {
 public:
  explicit Progress(std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Thread-safe; the newest status wins.
  void set(const std::string& status);
  // Stops printing and erases the line, so results print on a clean line.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  void draw(const std::string& status, Clock::time_point now);

  std::FILE* out_;
  bool tty_;
  Clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string status_;
  bool stop_ = false;
  bool finished_ = false;
  // Owned by the printing thread.
  std::string printed_;
  Clock::time_point printed_at_;
  bool line_open_ = false;
  std::thread thread_;
};

}  // namespace asynctp::tool
