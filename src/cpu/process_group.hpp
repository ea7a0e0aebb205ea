// A CPU group whose ranks are processes of one host (asynctp/cpu.hpp's
// make_process_comm): the same GroupLink as the in-process group, over POSIX
// shared memory that every rank maps.
//
// Control segment (cpu/shm_control.hpp): the agreement records (encoded as
// core/agreement_wire), the barrier, the pids, the receive slots' flags.
// Data segment: a record of who made and maps it (shm::DataHeader), then per
// rank, one region of `capacity` bytes that holds either
// the rank's registered copy of its A shard (all-gather: peers read it) or
// its W - 1 receive slots (reduce-scatter: peers write them). A call that
// needs more makes the workspace grow: its record says so
// (core::CallRecord::grows_workspace, the same on every rank since the
// regions' sizes follow from agreed shapes), and after the agreement all
// ranks map a new, larger data segment (the next generation) that rank 0
// makes, then unlink its name and drop the old one.
//
// Segment names are unlinked as soon as every rank has mapped them; before
// that, every failure path (a timeout, a rank that never came, a failed
// growth) unlinks every name the group may have made, so /dev/shm keeps
// nothing whichever rank survives. Where none survives (all killed while
// a name exists), each name carries the record that lets rank 0 of a later
// group remove it (cpu/shm_sweep.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/signals.hpp"
#include "cpu/group_link.hpp"
#include "cpu/process_id.hpp"
#include "cpu/shm_barrier.hpp"
#include "cpu/shm_control.hpp"
#include "cpu/shm_segment.hpp"

namespace asynctp::cpu {

// A data segment's bytes: its record (shm::DataHeader), then `world`
// regions of `capacity` bytes.
std::size_t data_segment_bytes(int world, std::size_t capacity) noexcept;

// What rank 0 makes: the data segment of `generation` that records
// `members` (published complete, ShmSegment::create).
ShmSegment make_data_segment(const SegmentNames& names, int world, std::uint32_t generation,
                             std::size_t capacity, const std::vector<shm::Member>& members);

class ProcessGroup final : public GroupLink {
 public:
  // Collective: joins the group `names` stands for (rank 0 makes it),
  // waiting at most setup_timeout_ms for every rank. Throws as
  // make_process_comm documents.
  ProcessGroup(const SegmentNames& names, int world, int rank, int workers,
               std::int64_t setup_timeout_ms);

  void agree(int rank, core::CallRecord& mine, std::exception_ptr& local_error,
             const core::OpCall& call, std::int64_t timeout_ms) override;
  std::vector<TensorView> shards(const core::ProblemDesc& problem) override;
  std::vector<InboxView> inboxes() override;
  void barrier(int rank, const char* what, std::int64_t timeout_ms) override;
  bool peer_lost() const noexcept override;

  // Bytes of each rank's data region now (grows, never shrinks).
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  void join(std::int64_t setup_timeout_ms);
  void unlink_setup_names() const noexcept;
  void wait_for_every_rank(std::int64_t setup_timeout_ms);
  char* region(int rank) const noexcept;
  // Copies this rank's A shard into its region, where the peers read it.
  void register_shard(const TensorView& a);
  // After an agreement whose records say the workspace grows.
  void grow(std::size_t needed, std::int64_t timeout_ms);

  const SegmentNames names_;
  const int world_;
  const int rank_;
  ShmSegment control_segment_;
  ShmSegment data_segment_;
  shm::Control control_;
  std::unique_ptr<ShmBarrier> barrier_;
  std::vector<core::ChunkSignals> inbox_flags_;  // views of the control segment's flags
  std::vector<core::CallRecord> records_;
  std::size_t capacity_;
  std::uint32_t generation_ = 0;
};

}  // namespace asynctp::cpu
