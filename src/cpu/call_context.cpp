#include "cpu/call_context.hpp"

#include "asynctp/error.hpp"

namespace asynctp::cpu {

void ChunkCountdown::reset(const std::vector<std::int64_t>& pieces_per_chunk) {
  if (size_ != pieces_per_chunk.size()) {
    size_ = pieces_per_chunk.size();
    remaining_ = std::make_unique<std::atomic<std::int64_t>[]>(size_);
  }
  for (std::size_t c = 0; c < size_; ++c) {
    remaining_[c].store(pieces_per_chunk[c], std::memory_order_relaxed);
  }
}

bool CallContext::acquire(const core::ChunkSignals& flags, int index, const std::string& lane,
                          const std::string& span_name, const std::string& span_args,
                          const std::function<std::string(std::uint32_t flag)>& timeout_message) {
  if (flags.load(index) == epoch) return true;
  const double begin = trace ? trace->now_us() : 0;
  const auto result = flags.wait(index, epoch, timeout_ms, &abort);
  if (trace)
    trace->add_span(problem.rank, lane, "wait", span_name, begin, trace->now_us(), span_args);
  switch (result) {
    case core::ChunkSignals::WaitResult::ready:
      return true;
    case core::ChunkSignals::WaitResult::aborted:
      return false;
    case core::ChunkSignals::WaitResult::timed_out:
      break;
  }
  abort = true;
  throw Error(ErrorCode::timeout, timeout_message(flags.load(index)));
}

bool CallContext::acquire_chunk(int chunk, const std::string& lane) {
  return acquire(*signals, chunk, lane, "wait chunk " + std::to_string(chunk),
                 "\"chunk\": " + std::to_string(chunk), [&](std::uint32_t flag) {
                   return core::chunk_timeout_message(problem.rank, chunk, flag, epoch, timeout_ms);
                 });
}

void CallContext::finish_piece(int chunk, const std::string& lane) {
  if (!countdown.finish_piece(chunk)) return;
  signals->release(chunk, epoch);
  if (trace) {
    trace->add_instant(
        problem.rank, lane, "signal", "chunk " + std::to_string(chunk) + " computed",
        trace->now_us(),
        "\"chunk\": " + std::to_string(chunk) + ", \"epoch\": " + std::to_string(epoch));
  }
}

void CallContext::before_compute(int chunk) const {
  if (hooks != nullptr && hooks->before_compute) hooks->before_compute(problem.rank, chunk);
}

}  // namespace asynctp::cpu
