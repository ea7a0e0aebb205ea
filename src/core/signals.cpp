#include "core/signals.hpp"

#include <chrono>
#include <sstream>
#include <thread>

#include "core/backoff.hpp"
#include "core/deadline.hpp"

namespace asynctp::core {

namespace {

// "rank R: <what>: its signal read F, expected epoch E after waiting T ms
// (ASYNCTP_WAIT_TIMEOUT_MS); <likely cause>": every wait's report.
std::string wait_timeout_message(int rank, const std::string& what, std::uint32_t flag_value,
                                 std::uint32_t expected_epoch, std::int64_t timeout_ms,
                                 const std::string& likely_cause) {
  std::ostringstream s;
  s << "rank " << rank << ": " << what << ": its signal read " << flag_value << ", expected epoch "
    << expected_epoch << " after waiting " << timeout_ms << " ms (ASYNCTP_WAIT_TIMEOUT_MS); "
    << likely_cause;
  return s.str();
}

}  // namespace

std::string chunk_timeout_message(int rank, int chunk, std::uint32_t flag_value,
                                  std::uint32_t expected_epoch, std::int64_t timeout_ms) {
  const std::string c = std::to_string(chunk);
  return wait_timeout_message(rank, "chunk " + c + " (the A shard of rank " + c + ") never arrived",
                              flag_value, expected_epoch, timeout_ms,
                              "the producer of that chunk stalled or a rank left the collective");
}

std::string partial_timeout_message(int owner, int source, std::uint32_t flag_value,
                                    std::uint32_t expected_epoch, std::int64_t timeout_ms) {
  const std::string s = std::to_string(source);
  return wait_timeout_message(
      owner, "chunk " + std::to_string(owner) + " (the partial of rank " + s + ") never arrived",
      flag_value, expected_epoch, timeout_ms,
      "rank " + s + "'s producer stalled or a rank left the collective");
}

std::string partial_compute_timeout_message(int rank, int chunk, std::uint32_t flag_value,
                                            std::uint32_t expected_epoch, std::int64_t timeout_ms) {
  return wait_timeout_message(
      rank, "chunk " + std::to_string(chunk) + " of this rank's partial product was not computed",
      flag_value, expected_epoch, timeout_ms, "this rank's GEMM stalled");
}

ChunkSignals::ChunkSignals(int chunks)
    : chunks_(chunks),
      owned_(std::make_unique<std::atomic<std::uint32_t>[]>(static_cast<std::size_t>(chunks))),
      flags_(owned_.get()) {
  for (int c = 0; c < chunks; ++c) flags_[c].store(0, std::memory_order_relaxed);
}

void ChunkSignals::release(int chunk, std::uint32_t epoch) noexcept {
  flags_[chunk].store(epoch, std::memory_order_release);
}

std::uint32_t ChunkSignals::load(int chunk) const noexcept {
  return flags_[chunk].load(std::memory_order_acquire);
}

ChunkSignals::WaitResult ChunkSignals::wait(int chunk, std::uint32_t epoch, std::int64_t timeout_ms,
                                            const std::atomic<bool>* abort) const noexcept {
  using Clock = std::chrono::steady_clock;
  const auto deadline = deadline_after(timeout_ms);
  for (Backoff backoff;; backoff.pause()) {
    if (load(chunk) == epoch) return WaitResult::ready;
    if (abort != nullptr && abort->load(std::memory_order_relaxed)) return WaitResult::aborted;
    if (!backoff.spinning() && Clock::now() >= deadline) return WaitResult::timed_out;
  }
}

}  // namespace asynctp::core
