// One rank's share of memory that every rank of the communicator can read
// and write: ncclMemAlloc'd, registered as an NCCL window, with each peer's
// share mapped into this process (ncclGetPeerPointer). Layout:
//   [0, kSyncBytes)   sync area: one 32-bit word per rank (the barrier's)
//   [kSyncBytes, ..)  gathered A: world_size chunks, chunk p = rank p's rows
// A rank's own chunk is written locally; its peers pull it from here.
//
// Growing has a local half and a collective half, so that a rank whose
// allocation fails can tell its peers before any of them enters NCCL's
// registration (a collective with no timeout): allocate() on every rank, then
// the ranks agree that every allocation succeeded, then register() on every
// rank. The communicator (nccl_comm.cpp) runs that protocol.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/resources.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::nccl {

inline constexpr std::size_t kSyncBytes = 4096;  // NCCL_WIN_REQUIRED_ALIGNMENT

// Waits, bounded, until `event` has completed; throws naming `what` (and
// leaves the communicator aborted) when it does not.
using BoundedWait = std::function<void(gpu::rt::EventHandle event, const std::string& what)>;

class SymmetricWorkspace {
 public:
  SymmetricWorkspace(ncclComm_t comm, int rank, int world);
  ~SymmetricWorkspace();
  SymmetricWorkspace(const SymmetricWorkspace&) = delete;
  SymmetricWorkspace& operator=(const SymmetricWorkspace&) = delete;

  // Whether the gathered region holds gathered_bytes already.
  bool fits(std::size_t gathered_bytes) const noexcept {
    return window_ && gathered_bytes <= gathered_capacity();
  }

  // Local: releases the old memory (no work of this rank may still use it)
  // and allocates room for gathered_bytes. Throws Error(backend) on failure,
  // leaving the workspace empty.
  void allocate(std::size_t gathered_bytes);

  // Collective, after every rank's allocate() succeeded: registers the window
  // (NCCL_WIN_DEFAULT: the device API's load/store access is all this needs),
  // maps the peers' memory and zeroes the sync area on every rank before any
  // rank returns. Device waits go through `wait`, on `stream`.
  void register_window(gpu::rt::StreamHandle stream, const BoundedWait& wait);

  // Deregisters and frees the memory (also done by the destructor); the
  // communicator must still be alive, unless `communicator_gone`.
  void release(bool communicator_gone = false) noexcept;

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
  gpu::DeviceMemory peer_pointers_;  // world pointers, written by a kernel
  gpu::PinnedMemory peer_pointers_host_;
  gpu::Event setup_done_{"event create (workspace setup)"};
  int generation_ = 0;
};

// Whether this communicator supports windows whose peers are all mapped here
// (one NVLink domain): "" when so, else why not. Collective
// (ncclDevCommCreate).
std::string peer_access_problem(ncclComm_t comm, int world);

}  // namespace asynctp::nccl
