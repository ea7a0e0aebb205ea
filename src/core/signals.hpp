// The per-chunk signal protocol. Each chunk has a 32-bit flag: all-gather +
// matmul, one per chunk of the gathered buffer; matmul + reduce-scatter, one
// per chunk of the partial product (its GEMM done) and one per receive slot
// of the owner (a peer's partial landed). Every call advances the caller's epoch; the producer
// stores the epoch into a chunk's flag (release) after the chunk's data, and a consumer may read
// the chunk's rows once it loads (acquire) a flag equal to the epoch. Flags from earlier calls hold
// older epochs and so never look ready, which is why no reset is needed between calls (or between
// CUDA graph replays). Every wait is bounded and reports which chunk from which rank never came.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace asynctp::core {

// The epoch after `current`. Skips 0, the value fresh flags start at.
constexpr std::uint32_t next_epoch(std::uint32_t current) noexcept {
  return current + 1 == 0 ? 1 : current + 1;
}

// Whether a GPU call's flags must go back to 0 before it runs. An
// uncaptured call's epoch is new to every flag (epochs only grow, and a
// replayed graph writes the older epoch it captured), so it needs no reset.
// A captured call does: its graph replays one epoch, which the previous
// replay left in the flags. Once the epochs have wrapped around, a flag may
// hold an old value that a new epoch repeats: from then on every call
// resets. One rule per set of flags (a rank's resources), fed every call's
// epoch in order.
class FlagResetRule {
 public:
  bool reset_before(std::uint32_t epoch, bool capturing) noexcept {
    if (epoch <= last_epoch_) wrapped_ = true;
    last_epoch_ = epoch;
    return capturing || wrapped_;
  }

 private:
  std::uint32_t last_epoch_ = 0;
  bool wrapped_ = false;
};

// The message of a chunk wait that timed out (shared by every backend).
std::string chunk_timeout_message(int rank, int chunk, std::uint32_t flag_value,
                                  std::uint32_t expected_epoch, std::int64_t timeout_ms);

// Matmul + reduce-scatter: the message of an owner's wait for a peer's
// partial of its chunk that timed out.
std::string partial_timeout_message(int owner, int source, std::uint32_t flag_value,
                                    std::uint32_t expected_epoch, std::int64_t timeout_ms);
// Matmul + reduce-scatter: the message of a wait for this rank's own GEMM to
// finish a chunk of its partial product (the producer's, before shipping it;
// the reduction's, for the rank's own chunk) that timed out.
std::string partial_compute_timeout_message(int rank, int chunk, std::uint32_t flag_value,
                                            std::uint32_t expected_epoch, std::int64_t timeout_ms);

// Host-memory flags for one rank's chunks (CPU backend; host-mapped flags).
class ChunkSignals {
 public:
  // Owns `chunks` flags, all 0.
  explicit ChunkSignals(int chunks);
  // Flags that live elsewhere (shared memory another process also maps),
  // already initialized there; they must outlive this object.
  ChunkSignals(std::atomic<std::uint32_t>* shared, int chunks) noexcept
      : chunks_(chunks), flags_(shared) {}

  int size() const noexcept { return chunks_; }
  void release(int chunk, std::uint32_t epoch) noexcept;
  std::uint32_t load(int chunk) const noexcept;

  enum class WaitResult { ready, timed_out, aborted };
  // Waits until chunk's flag equals epoch, `abort` becomes true, or
  // timeout_ms elapses. Polls with a growing back-off (spin, yield, sleep),
  // the CPU analogue of __nanosleep between polls.
  WaitResult wait(int chunk, std::uint32_t epoch, std::int64_t timeout_ms,
                  const std::atomic<bool>* abort = nullptr) const noexcept;

 private:
  int chunks_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> owned_;
  std::atomic<std::uint32_t>* flags_;
};

}  // namespace asynctp::core
