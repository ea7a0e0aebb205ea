#include "progress.hpp"

#include <unistd.h>

namespace asynctp::tool {
namespace {

constexpr auto kQuietStart = std::chrono::milliseconds(1500);
constexpr auto kPlainInterval = std::chrono::milliseconds(2000);
constexpr auto kTtyRefresh = std::chrono::milliseconds(1000);
constexpr auto kPoll = std::chrono::milliseconds(100);

}  // namespace

Progress::Progress(std::FILE* out)
    : out_(out), tty_(isatty(fileno(out)) != 0), start_(Clock::now()) {
  thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { finish(); }

void Progress::set(const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = status;
}

void Progress::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (line_open_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
}

void Progress::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kPoll, [this] { return stop_; });
    if (stop_) break;
    const Clock::time_point now = Clock::now();
    if (now - start_ < kQuietStart || status_.empty()) continue;
    const bool changed = status_ != printed_;
    // On a terminal the elapsed seconds tick; in a log only news is written,
    // and not too often.
    const bool due = tty_ ? (changed || now - printed_at_ >= kTtyRefresh)
                          : (changed && now - printed_at_ >= kPlainInterval);
    if (!due) continue;
    const std::string status = status_;
    lock.unlock();
    draw(status, now);
    lock.lock();
  }
}

void Progress::draw(const std::string& status, Clock::time_point now) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s  (%llds)", status.c_str(), static_cast<long long>(seconds));
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s  (%llds)\n", status.c_str(), static_cast<long long>(seconds));
  }
  std::fflush(out_);
  printed_ = status;
  printed_at_ = now;
}

}  // namespace asynctp::tool
