// What the ranks of an in-process CPU group share: the barrier and, per
// rank, the record each call publishes and the inbox its peers push partials
// into. The records and inboxes are this group's symmetric workspace: every
// rank reads every other rank's A shard in place (the record carries the
// caller's view), and writes every other rank's receive slots, directly.
#pragma once

#include <memory>
#include <vector>

#include "core/agreement.hpp"
#include "core/bounded_barrier.hpp"
#include "cpu/group_link.hpp"
#include "cpu/inbox.hpp"

namespace asynctp::cpu {

class GroupState final : public GroupLink {
 public:
  GroupState(int world, int workers);

  void agree(int rank, core::CallRecord& mine, std::exception_ptr& local_error,
             const core::OpCall& call, std::int64_t timeout_ms) override;
  std::vector<TensorView> shards(const core::ProblemDesc& problem) override;
  std::vector<InboxView> inboxes() override;
  void barrier(int rank, const char* what, std::int64_t timeout_ms) override;

 private:
  core::BoundedBarrier barrier_;
  std::vector<core::CallRecord> records_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;
};

}  // namespace asynctp::cpu
