#include "cpu/call_context.hpp"

#include "asynctp/error.hpp"

namespace asynctp::cpu {

bool CallContext::acquire_chunk(int chunk, const std::string& lane) {
  if (signals->load(chunk) == epoch) return true;
  const double begin = trace ? trace->now_us() : 0;
  const auto result = signals->wait(chunk, epoch, timeout_ms, &abort);
  if (trace) {
    trace->add_span(problem.rank, lane, "wait", "wait chunk " + std::to_string(chunk), begin,
                    trace->now_us(), "\"chunk\": " + std::to_string(chunk));
  }
  switch (result) {
    case core::ChunkSignals::WaitResult::ready:
      return true;
    case core::ChunkSignals::WaitResult::aborted:
      return false;
    case core::ChunkSignals::WaitResult::timed_out:
      break;
  }
  abort = true;
  throw Error(
      ErrorCode::timeout,
      core::chunk_timeout_message(problem.rank, chunk, signals->load(chunk), epoch, timeout_ms));
}

}  // namespace asynctp::cpu
