// The layout of a process group's control segment: the part of the
// workspace that never grows. One header, then a rank area per rank (its
// pid and pid namespace, its barrier arrivals, its agreement record), then the flags of every
// rank's receive slots (W - 1 each). Only lock-free atomics cross processes:
// no mutex or condition variable lives here, so a process that dies holding
// nothing leaves nothing locked.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/agreement_wire.hpp"

namespace asynctp::cpu::shm {

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

inline constexpr std::uint64_t kControlMagic = 0x6173796e63747031;  // "asynctp1"

// Why a group broke, for every rank to read.
// (timeout: a rank waited too long; peer_died: a rank's process is gone;
// failed: a rank could not take its part, e.g. in a growth of the workspace)
enum class Broken : std::uint32_t { no = 0, timeout = 1, peer_died = 2, failed = 3 };

struct Header {
  std::atomic<std::uint64_t> magic{0};  // stored last by rank 0: the rest is ready
  std::uint32_t world_size = 0;
  // Set once (compare-exchange from `no`) by the rank that broke the group;
  // that rank then writes `reason` and sets `reason_ready`.
  std::atomic<std::uint32_t> broken{0};
  std::atomic<std::uint32_t> reason_ready{0};
  char reason[1024] = {};
};

struct RankArea {
  alignas(64) std::atomic<std::uint64_t> arrivals{0};  // barriers this rank entered
  alignas(64) std::atomic<std::int32_t> pid{0};        // 0 until the rank mapped the group
  // The rank's pid namespace (the device and inode of /proc/self/ns/pid; 0
  // when unknown), written before its pid, which publishes it. A peer in
  // the same namespace whose pid does not run is dead, not out of sight.
  std::uint64_t pid_namespace_dev = 0;
  std::uint64_t pid_namespace_ino = 0;
  alignas(64) unsigned char record[core::kWireRecordBytes] = {};
};

inline constexpr std::size_t round_up(std::size_t bytes, std::size_t to) noexcept {
  return (bytes + to - 1) / to * to;
}

inline std::size_t ranks_offset() noexcept { return round_up(sizeof(Header), 64); }
inline std::size_t flags_offset(int world) noexcept {
  return ranks_offset() + sizeof(RankArea) * static_cast<std::size_t>(world);
}
inline std::size_t control_bytes(int world) noexcept {
  return round_up(flags_offset(world) + sizeof(std::atomic<std::uint32_t>) *
                                            static_cast<std::size_t>(world) *
                                            static_cast<std::size_t>(world > 1 ? world - 1 : 0),
                  4096);
}

// Views of a mapped control segment.
struct Control {
  Header* header = nullptr;
  RankArea* ranks = nullptr;
  std::atomic<std::uint32_t>* flags = nullptr;  // rank r's slots: [r * (W-1), (r+1) * (W-1))

  Control() = default;
  Control(void* base, int world) noexcept
      : header(static_cast<Header*>(base)),
        ranks(reinterpret_cast<RankArea*>(static_cast<char*>(base) + ranks_offset())),
        flags(reinterpret_cast<std::atomic<std::uint32_t>*>(static_cast<char*>(base) +
                                                            flags_offset(world))) {}
};

// Rank 0, on a fresh zero-filled segment: constructs every object in place.
// The magic is stored last, by the caller, once the rest of the group's
// memory exists too.
inline Control construct_control(void* base, int world) {
  new (base) Header();
  Control control(base, world);
  control.header->world_size = static_cast<std::uint32_t>(world);
  for (int r = 0; r < world; ++r) new (&control.ranks[r]) RankArea();
  const std::size_t flags = static_cast<std::size_t>(world) * static_cast<std::size_t>(world - 1);
  for (std::size_t i = 0; i < flags; ++i) new (&control.flags[i]) std::atomic<std::uint32_t>(0);
  return control;
}

}  // namespace asynctp::cpu::shm
