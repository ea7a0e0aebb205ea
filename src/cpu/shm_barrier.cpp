#include "cpu/shm_barrier.hpp"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "asynctp/error.hpp"
#include "core/backoff.hpp"
#include "core/deadline.hpp"

namespace asynctp::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// How often a long wait looks whether the missing ranks' processes live.
constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

ErrorCode code_of(shm::Broken kind) noexcept {
  return kind == shm::Broken::timeout ? ErrorCode::timeout : ErrorCode::backend;
}

}  // namespace

bool process_alive(std::int32_t pid) noexcept {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A killed child that its parent has not reaped yet is a zombie: it still
  // answers kill(pid, 0) but will never run again.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: trust kill()
  const auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return true;
  const char state = line[paren + 2];
  return state != 'Z' && state != 'X';
}

shm::Broken ShmBarrier::broken() const noexcept {
  return static_cast<shm::Broken>(control_.header->broken.load(std::memory_order_acquire));
}

std::string ShmBarrier::reason() const {
  // The breaking rank writes the reason right after it wins; it may die in
  // between, so the wait for it is short and bounded.
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  while (control_.header->reason_ready.load(std::memory_order_acquire) == 0) {
    if (Clock::now() >= deadline) return "(the rank that broke it gave no reason)";
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  const char* text = control_.header->reason;
  return std::string(text, strnlen(text, sizeof control_.header->reason));
}

std::string ShmBarrier::break_group(shm::Broken kind, const std::string& reason_text) noexcept {
  std::uint32_t expected = static_cast<std::uint32_t>(shm::Broken::no);
  if (control_.header->broken.compare_exchange_strong(expected, static_cast<std::uint32_t>(kind),
                                                      std::memory_order_acq_rel)) {
    const std::size_t bytes = std::min(reason_text.size(), sizeof control_.header->reason - 1);
    std::memcpy(control_.header->reason, reason_text.data(), bytes);
    control_.header->reason[bytes] = '\0';
    control_.header->reason_ready.store(1, std::memory_order_release);
    return reason_text;
  }
  try {
    return reason();
  } catch (...) {
    return reason_text;
  }
}

void ShmBarrier::throw_if_broken() const {
  const shm::Broken kind = broken();
  if (kind != shm::Broken::no) throw Error(code_of(kind), "group is broken: " + reason());
}

int ShmBarrier::first_missing(std::uint64_t target) const noexcept {
  for (int r = 0; r < world_; ++r) {
    if (control_.ranks[r].arrivals.load(std::memory_order_acquire) < target) return r;
  }
  return -1;
}

int ShmBarrier::dead_missing(std::uint64_t target) const noexcept {
  for (int r = 0; r < world_; ++r) {
    if (control_.ranks[r].arrivals.load(std::memory_order_acquire) < target &&
        !process_alive(control_.ranks[r].pid.load(std::memory_order_relaxed))) {
      return r;
    }
  }
  return -1;
}

void ShmBarrier::arrive_and_wait(int rank, const char* what, std::int64_t timeout_ms) {
  throw_if_broken();
  const std::uint64_t target = ++entered_;
  control_.ranks[rank].arrivals.store(target, std::memory_order_release);

  const auto deadline = core::deadline_after(timeout_ms);
  auto next_look = Clock::now() + kLivenessPeriod;
  for (core::Backoff backoff;; backoff.pause()) {
    if (first_missing(target) < 0) return;
    throw_if_broken();
    if (backoff.spinning()) continue;
    const auto now = Clock::now();
    if (watch_peers_ && now >= next_look) {
      next_look = now + kLivenessPeriod;
      if (const int dead = dead_missing(target); dead >= 0) {
        const std::string why =
            "rank " + std::to_string(dead) + " (pid " +
            std::to_string(control_.ranks[dead].pid.load(std::memory_order_relaxed)) +
            ") is gone (exited or was killed) while rank " + std::to_string(rank) +
            " waited for it at the '" + what + "' barrier";
        throw Error(ErrorCode::backend, break_group(shm::Broken::peer_died, why));
      }
    }
    if (now >= deadline) {
      std::string missing;
      for (int r = 0; r < world_; ++r) {
        if (control_.ranks[r].arrivals.load(std::memory_order_acquire) < target) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      const std::string why = "rank " + std::to_string(rank) + " waited " +
                              std::to_string(timeout_ms) + " ms at the '" + what +
                              "' barrier (ASYNCTP_WAIT_TIMEOUT_MS) for rank(s) " + missing +
                              ", which never arrived";
      const std::string stands = break_group(shm::Broken::timeout, why);
      throw Error(ErrorCode::timeout, stands == why ? why : "group is broken: " + stands);
    }
  }
}

}  // namespace asynctp::cpu
