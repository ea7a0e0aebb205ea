#include "cpu/process_group.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "asynctp/error.hpp"
#include "core/agreement_wire.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "cpu/shm_sweep.hpp"

namespace asynctp::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Each rank's data region to begin with; calls that need more grow it.
constexpr std::size_t kInitialCapacity = 64 * 1024;
constexpr auto kSetupPoll = std::chrono::milliseconds(1);

// What a call keeps in each rank's region: the A shard (all-gather) or the
// W - 1 receive slots (reduce-scatter). Follows from agreed shapes only, so
// every rank computes the same.
std::size_t region_bytes(const core::ProblemDesc& p) {
  if (p.op == core::OpKind::matmul_reduce_scatter) return inbox_bytes(p);
  return static_cast<std::size_t>(p.m * p.k) * element_size(p.dtype);
}

// Writes `me`'s pid namespace into its rank area, before the caller stores
// the pid, which publishes it.
void record_namespace(shm::RankArea& area, const shm::Member& me) {
  area.pid_namespace_dev = me.pid_namespace_dev;
  area.pid_namespace_ino = me.pid_namespace_ino;
}

std::string setup_timeout(int rank, std::int64_t timeout_ms, const std::string& waited_for) {
  return "make_process_comm: rank " + std::to_string(rank) + " waited " +
         std::to_string(timeout_ms) + " ms (setup_timeout_ms) for " + waited_for;
}

// The agreement's barriers (core::agree_or_throw): once every rank has
// arrived at the first, every record is in its shared slot, and this reads
// them all. A record that does not decode becomes a failed record, so that
// every rank reaches the same verdict about it.
class RecordReadingBarrier final : public core::Barrier {
 public:
  RecordReadingBarrier(ShmBarrier& inner, const shm::Control& control, int world,
                       std::vector<core::CallRecord>& records)
      : inner_(inner), control_(control), world_(world), records_(records) {}

  void arrive_and_wait(int rank, const char* what, std::int64_t timeout_ms) override {
    inner_.arrive_and_wait(rank, what, timeout_ms);
    if (read_) return;
    read_ = true;
    records_.assign(static_cast<std::size_t>(world_), {});
    for (int r = 0; r < world_; ++r) {
      core::WireRecord wire;
      std::memcpy(wire.data(), control_.ranks[r].record, wire.size());
      try {
        records_[static_cast<std::size_t>(r)] = core::decode(wire);
      } catch (const Error& e) {
        records_[static_cast<std::size_t>(r)].error = e.what();
      }
    }
  }

 private:
  ShmBarrier& inner_;
  const shm::Control& control_;
  const int world_;
  std::vector<core::CallRecord>& records_;
  bool read_ = false;
};

}  // namespace

std::size_t data_segment_bytes(int world, std::size_t capacity) noexcept {
  return shm::data_header_bytes(world) + capacity * static_cast<std::size_t>(world);
}

ShmSegment make_data_segment(const SegmentNames& names, int world, std::uint32_t generation,
                             std::size_t capacity, const std::vector<shm::Member>& members) {
  return ShmSegment::create(
      names.data(generation), data_segment_bytes(world, capacity), [&](void* base) {
        shm::write_data_header(base, world, members.data(), static_cast<int>(members.size()));
      });
}

ProcessGroup::ProcessGroup(const SegmentNames& names, int world, int rank, int workers,
                           std::int64_t setup_timeout_ms)
    : GroupLink(world, workers),
      names_(names),
      world_(world),
      rank_(rank),
      capacity_(kInitialCapacity) {
  try {
    join(setup_timeout_ms);
  } catch (...) {
    // Whoever made them, the names must not outlive a group that failed.
    unlink_setup_names();
    throw;
  }
  // Every rank has mapped both: from now on the memory lives exactly as
  // long as the mappings.
  unlink_setup_names();
}

void ProcessGroup::unlink_setup_names() const noexcept {
  // The control segment last: it records every rank that joined, so a
  // process killed in between leaves a name that says whose it was.
  ShmSegment::unlink(names_.data(0));
  ShmSegment::unlink(names_.control());
}



void ProcessGroup::join(std::int64_t setup_timeout_ms) {
  const auto deadline = core::deadline_after(setup_timeout_ms);
  const shm::Member me = this_process_member();
  if (rank_ == 0) {
    // What groups whose every process died left behind goes before this
    // group adds its own names (cpu/shm_sweep.hpp says why it is safe).
    sweep_stale_segments(rank_);
    // The data segment first: a control segment that a peer can find says
    // the whole group is ready (its name appears complete).
    data_segment_ = make_data_segment(names_, world_, 0, capacity_, {me});
    control_segment_ =
        ShmSegment::create(names_.control(), shm::control_bytes(world_), [&](void* base) {
          const shm::Control control = shm::construct_control(base, world_);
          record_namespace(control.ranks[0], me);
          control.ranks[0].pid.store(me.pid, std::memory_order_relaxed);
          control.header->magic.store(shm::kControlMagic, std::memory_order_release);
        });
    control_ = shm::Control(control_segment_.data(), world_);
  } else {
    for (;;) {
      if (auto segment = ShmSegment::open(names_.control(), sizeof(shm::Header))) {
        const auto* header = static_cast<const shm::Header*>(segment->data());
        if (header->magic.load(std::memory_order_acquire) == shm::kControlMagic) {
          if (header->world_size != static_cast<std::uint32_t>(world_)) {
            throw Error(ErrorCode::invalid_argument, "world_size: rank 0 made this group for " +
                                                         std::to_string(header->world_size) +
                                                         " ranks, rank " + std::to_string(rank_) +
                                                         " says " + std::to_string(world_));
          }
          if (segment->size() < shm::control_bytes(world_)) {
            throw Error(ErrorCode::backend, "shared memory " + names_.control() +
                                                " is smaller than a group of " +
                                                std::to_string(world_) + " ranks needs");
          }
          control_segment_ = std::move(*segment);
          break;
        }
      }
      if (Clock::now() >= deadline) {
        throw Error(ErrorCode::timeout,
                    setup_timeout(rank_, setup_timeout_ms,
                                  "rank 0 to make the group's shared memory (" + names_.control() +
                                      "); is rank 0 running, on this host, with the same id?"));
      }
      std::this_thread::sleep_for(kSetupPoll);
    }
    control_ = shm::Control(control_segment_.data(), world_);
    auto data = ShmSegment::open(names_.data(0), data_segment_bytes(world_, capacity_));
    if (!data) {
      throw Error(ErrorCode::backend, "shared memory " + names_.data(0) +
                                          " is gone: the group failed before rank " +
                                          std::to_string(rank_) + " joined");
    }
    data_segment_ = std::move(*data);
    if (control_.ranks[rank_].pid.load(std::memory_order_acquire) == 0) {
      record_namespace(control_.ranks[rank_], me);
    }
    std::int32_t none = 0;
    if (!control_.ranks[rank_].pid.compare_exchange_strong(none, me.pid,
                                                           std::memory_order_acq_rel)) {
      throw Error(ErrorCode::invalid_argument, "rank: rank " + std::to_string(rank_) +
                                                   " of this group joined already (pid " +
                                                   std::to_string(none) + ")");
    }
  }
  barrier_ = std::make_unique<ShmBarrier>(control_, world_);
  const int slots = world_ - 1;
  for (int r = 0; r < world_; ++r) {
    inbox_flags_.emplace_back(control_.flags + static_cast<std::ptrdiff_t>(r) * slots, slots);
  }
  wait_for_every_rank(setup_timeout_ms);
}

void ProcessGroup::wait_for_every_rank(std::int64_t setup_timeout_ms) {
  const auto deadline = core::deadline_after(setup_timeout_ms);
  for (;;) {
    std::string missing;
    for (int r = 0; r < world_; ++r) {
      if (control_.ranks[r].pid.load(std::memory_order_acquire) == 0) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (missing.empty()) {
      // Every rank wrote its pid; if this process cannot see one of them
      // (another pid namespace sharing /dev/shm), a pid says nothing here.
      // A peer in this process's namespace is always in sight: if its pid
      // does not run, it died after it joined, and the next barrier says so.
      const shm::RankArea& me = control_.ranks[rank_];
      std::string unseen;
      for (int r = 0; r < world_; ++r) {
        const shm::RankArea& peer = control_.ranks[r];
        const bool same_namespace = me.pid_namespace_ino != 0 &&
                                    peer.pid_namespace_ino == me.pid_namespace_ino &&
                                    peer.pid_namespace_dev == me.pid_namespace_dev;
        if (!same_namespace && !process_alive(peer.pid.load(std::memory_order_relaxed))) {
          unseen += (unseen.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      if (!unseen.empty()) {
        barrier_->watch_peers(false);
        core::log(core::LogLevel::warn, rank_,
                  "cannot see the process of rank(s) " + unseen +
                      " (another pid namespace?): a peer that dies is noticed only when a wait "
                      "times out (ASYNCTP_WAIT_TIMEOUT_MS)");
      }
      return;
    }
    if (Clock::now() >= deadline) {
      throw Error(ErrorCode::timeout,
                  setup_timeout(rank_, setup_timeout_ms,
                                "rank(s) " + missing +
                                    " to join; are they running, on this host, with the same id "
                                    "and world_size?"));
    }
    std::this_thread::sleep_for(kSetupPoll);
  }
}

char* ProcessGroup::region(int rank) const noexcept {
  return static_cast<char*>(data_segment_.data()) + shm::data_header_bytes(world_) +
         capacity_ * static_cast<std::size_t>(rank);
}

void ProcessGroup::register_shard(const TensorView& a) {
  const std::size_t row_bytes = static_cast<std::size_t>(a.cols) * element_size(a.dtype);
  const std::size_t stride_bytes = static_cast<std::size_t>(a.row_stride) * element_size(a.dtype);
  char* dst = region(rank_);
  const auto* src = static_cast<const char*>(a.data);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    std::memcpy(dst + row_bytes * static_cast<std::size_t>(i),
                src + stride_bytes * static_cast<std::size_t>(i), row_bytes);
  }
}

void ProcessGroup::agree(int rank, core::CallRecord& mine, std::exception_ptr& local_error,
                         const core::OpCall& call, std::int64_t timeout_ms) {
  std::size_t needed = 0;
  if (mine.ok) {
    needed = region_bytes(mine.problem);
    mine.grows_workspace = needed > capacity_;
    // The peers read it once the records agree; they are done with the
    // previous call's (the completion barrier), so the region is free.
    if (!mine.grows_workspace && call.op == core::OpKind::all_gather_matmul) {
      register_shard(call.a);
    }
  }
  const core::WireRecord wire = core::encode(mine);
  std::memcpy(control_.ranks[rank].record, wire.data(), wire.size());
  RecordReadingBarrier arguments(*barrier_, control_, world_, records_);
  mine.plan = core::agree_or_throw(arguments, records_, rank, timeout_ms, local_error);
  // The records agree, so every rank's says the same.
  if (mine.grows_workspace) {
    grow(needed, timeout_ms);
    if (call.op == core::OpKind::all_gather_matmul) register_shard(call.a);
    barrier_->arrive_and_wait(rank, "shards registered", timeout_ms);
  }
}

void ProcessGroup::grow(std::size_t needed, std::int64_t timeout_ms) {
  const std::size_t capacity = shm::round_up(std::max(needed, 2 * capacity_), 4096);
  const std::uint32_t generation = generation_ + 1;
  const std::string name = names_.data(generation);
  const std::size_t bytes = data_segment_bytes(world_, capacity);
  try {
    ShmSegment next;
    if (rank_ == 0) {
      try {
        // Every rank joined: the new segment names them all, since no
        // control segment name is left to say whose it is.
        std::vector<shm::Member> members;
        for (int r = 0; r < world_; ++r) {
          const shm::RankArea& area = control_.ranks[r];
          members.push_back({area.pid.load(std::memory_order_acquire), 0,
                             area.pid_namespace_dev, area.pid_namespace_ino});
        }
        next = make_data_segment(names_, world_, generation, capacity, members);
      } catch (const Error& e) {
        barrier_->break_group(shm::Broken::failed,
                              std::string("rank 0 could not grow the workspace: ") + e.what());
        throw;
      }
    }
    barrier_->arrive_and_wait(rank_, "workspace made", timeout_ms);
    if (rank_ != 0) {
      auto opened = ShmSegment::open(name, bytes);
      if (!opened) {
        const std::string why = "rank " + std::to_string(rank_) + " could not map the grown " +
                                "workspace " + name + ": it is gone";
        barrier_->break_group(shm::Broken::failed, why);
        throw Error(ErrorCode::backend, why);
      }
      next = std::move(*opened);
    }
    barrier_->arrive_and_wait(rank_, "workspace mapped", timeout_ms);
    ShmSegment::unlink(name);
    data_segment_ = std::move(next);  // unmaps the previous generation
  } catch (...) {
    ShmSegment::unlink(name);
    throw;
  }
  capacity_ = capacity;
  generation_ = generation;
  core::log(
      core::LogLevel::info, rank_,
      "shared workspace grown to " + std::to_string(capacity) + " bytes per rank (" + name + ")");
}

std::vector<TensorView> ProcessGroup::shards(const core::ProblemDesc& problem) {
  std::vector<TensorView> out;
  for (int r = 0; r < world_; ++r) {
    out.push_back(TensorView::row_major(region(r), problem.dtype, problem.m, problem.k));
  }
  return out;
}

std::vector<InboxView> ProcessGroup::inboxes() {
  std::vector<InboxView> out;
  for (int r = 0; r < world_; ++r) {
    out.push_back({&inbox_flags_[static_cast<std::size_t>(r)], region(r)});
  }
  return out;
}

void ProcessGroup::barrier(int rank, const char* what, std::int64_t timeout_ms) {
  barrier_->arrive_and_wait(rank, what, timeout_ms);
}

bool ProcessGroup::peer_lost() const noexcept {
  return barrier_->broken() == shm::Broken::peer_died;
}

}  // namespace asynctp::cpu
