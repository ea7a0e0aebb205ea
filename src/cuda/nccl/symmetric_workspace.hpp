// One rank's share of memory that every rank of the communicator can read
// and write: ncclMemAlloc'd, registered as a symmetric NCCL window, with each
// peer's share mapped into this process (ncclGetPeerPointer). Layout:
//   [0, kSyncBytes)   sync area: one 32-bit word per rank (the barrier's)
//   [kSyncBytes, ..)  gathered A: world_size chunks, chunk p = rank p's rows
// A rank's own chunk is written locally; its peers pull it from here.
//
// Growing is collective (window registration is): every rank must call
// ensure() with the same size in the same order, which holds because the
// ranks agreed on the problem first. The size goes to the log.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace asynctp::nccl {

inline constexpr std::size_t kSyncBytes = 4096;  // NCCL_WIN_REQUIRED_ALIGNMENT

class SymmetricWorkspace {
 public:
  SymmetricWorkspace(ncclComm_t comm, int rank, int world);
  ~SymmetricWorkspace();
  SymmetricWorkspace(const SymmetricWorkspace&) = delete;
  SymmetricWorkspace& operator=(const SymmetricWorkspace&) = delete;

  // Collective. Makes the gathered region at least gathered_bytes (no-op
  // when it is); the caller has no work in flight on the old memory. New
  // memory starts with a zeroed sync area on every rank before any rank
  // returns (a host-synchronous NCCL all-reduce orders it).
  void ensure(std::size_t gathered_bytes);

  // Deregisters and frees the memory (also done by the destructor); the
  // communicator must still be alive.
  void release() noexcept;

  std::size_t gathered_capacity() const noexcept;
  void* gathered() const noexcept;                     // this rank's gathered region
  const void* peer_gathered(int peer) const noexcept;  // peer's, mapped here
  std::uint32_t* sync_area() const noexcept;
  // Device array of world pointers to the peers' sync areas (for the barrier).
  std::uint32_t* const* peer_sync_areas_device() const noexcept;
  // Bumped each time the memory is replaced (callers reset what refers to it).
  int generation() const noexcept { return generation_; }

 private:
  ncclComm_t comm_;
  int rank_, world_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  ncclWindow_t window_ = nullptr;
  std::vector<char*> peer_bases_;
  void* peer_sync_device_ = nullptr;  // cudaMalloc'd array of world pointers
  int generation_ = 0;
};

// Whether this communicator supports symmetric windows whose peers are all
// mapped here (one NVLink domain): "" when so, else why not. Collective
// (ncclDevCommCreate).
std::string peer_access_problem(ncclComm_t comm, int world);

}  // namespace asynctp::nccl
