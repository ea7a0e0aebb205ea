#include "progress.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace asynctp::tool {

struct Progress::Printer {
  using Clock = std::chrono::steady_clock;
  static constexpr auto kQuietStart = std::chrono::milliseconds(1500);
  static constexpr auto kPlainInterval = std::chrono::milliseconds(2000);
  static constexpr auto kTtyRefresh = std::chrono::milliseconds(1000);

  const bool tty = isatty(fileno(stderr)) != 0;
  const Clock::time_point start = Clock::now();
  std::mutex mutex;
  std::condition_variable wake;
  std::string status;  // guarded by mutex, as is stop
  bool stop = false;
  std::string printed;  // the printing thread's own, as are the two below
  Clock::time_point printed_at;
  bool line_open = false;
  std::thread thread{[this] { loop(); }};

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!wake.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop; })) {
      const Clock::time_point now = Clock::now();
      if (now - start < kQuietStart || status.empty()) continue;
      // On a terminal the elapsed seconds tick; in a log only news is
      // written, and not too often.
      const bool changed = status != printed;
      if (tty ? !changed && now - printed_at < kTtyRefresh
              : !changed || now - printed_at < kPlainInterval) {
        continue;
      }
      printed = status;
      printed_at = now;
      lock.unlock();
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
      std::fprintf(stderr, tty ? "\r\033[K%s  (%llds)" : "%s  (%llds)\n", printed.c_str(),
                   static_cast<long long>(seconds));
      std::fflush(stderr);
      line_open = tty;
      lock.lock();
    }
  }
};

Progress::Progress() : printer_(std::make_unique<Printer>()) {}

Progress::~Progress() { finish(); }

void Progress::set(const std::string& status) {
  const std::lock_guard<std::mutex> lock(printer_->mutex);
  printer_->status = status;
}

void Progress::finish() {
  if (!printer_) return;
  {
    const std::lock_guard<std::mutex> lock(printer_->mutex);
    printer_->stop = true;
  }
  printer_->wake.notify_all();
  printer_->thread.join();
  if (printer_->line_open) std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  printer_.reset();
}

}  // namespace asynctp::tool
