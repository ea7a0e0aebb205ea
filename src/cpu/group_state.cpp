#include "cpu/group_state.hpp"

#include "asynctp/error.hpp"

namespace asynctp::cpu {

GroupState::GroupState(int world, int workers)
    : GroupLink(world, workers), barrier_(world), records_(static_cast<std::size_t>(world)) {
  for (int r = 0; r < world; ++r) inboxes_.push_back(std::make_unique<Inbox>(world));
}

void GroupState::agree(int rank, core::CallRecord& mine, std::exception_ptr& local_error,
                       const core::OpCall& call, std::int64_t timeout_ms) {
  if (mine.ok && call.op == core::OpKind::matmul_reduce_scatter) {
    // The peers write these slots once the records agree, so they must be
    // in place before this rank's record says it is ready.
    try {
      inboxes_[static_cast<std::size_t>(rank)]->reserve(mine.problem);
    } catch (const Error& e) {
      core::record_local_failure(mine, local_error, e.what());
    }
  }
  core::publish_and_agree(barrier_, records_, mine, rank, timeout_ms, local_error);
}

std::vector<TensorView> GroupState::shards(const core::ProblemDesc&) {
  std::vector<TensorView> out;
  for (const core::CallRecord& record : records_) out.push_back(record.shard);
  return out;
}

std::vector<InboxView> GroupState::inboxes() {
  std::vector<InboxView> out;
  for (const auto& inbox : inboxes_) out.push_back(inbox->view());
  return out;
}

void GroupState::barrier(int rank, const char* what, std::int64_t timeout_ms) {
  barrier_.arrive_and_wait(rank, what, timeout_ms);
}

}  // namespace asynctp::cpu
