#include "cuda/nccl/symmetric_workspace.hpp"

#include <string>

#include "asynctp/error.hpp"
#include "core/log.hpp"
#include "cuda/nccl/device_kernels.hpp"
#include "cuda/nccl/nccl_check.hpp"
#include "cuda/nccl/nccl_device_api.hpp"
#include "gpu/check.hpp"

namespace asynctp::nccl {
namespace {

namespace rt = gpu::rt;

std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

std::string peer_access_problem(ncclComm_t comm, int world) {
  ncclDevCommRequirements requirements{};
  ncclDevComm device_comm{};
  const ncclResult_t status = ncclDevCommCreate(comm, &requirements, &device_comm);
  if (status != ncclSuccess) {
    return std::string("NCCL has no symmetric memory for this communicator (ncclDevCommCreate: ") +
           ncclGetErrorString(status) + ")";
  }
  const int lsa_size = device_comm.lsaSize;
  (void)ncclDevCommDestroy(comm, &device_comm);
  if (lsa_size != world) {
    return "only " + std::to_string(lsa_size) + " of the " + std::to_string(world) +
           " ranks share this rank's NVLink domain (load/store access); the others are reached "
           "through NCCL only";
  }
  return "";
}

SymmetricWorkspace::SymmetricWorkspace(ncclComm_t comm, int rank, int world)
    : comm_(comm), rank_(rank), world_(world) {}

SymmetricWorkspace::~SymmetricWorkspace() { release(); }

void SymmetricWorkspace::release(bool communicator_gone) noexcept {
  if (window_ && !communicator_gone) (void)ncclCommWindowDeregister(comm_, window_);
  if (base_) (void)ncclMemFree(base_);
  window_ = nullptr;
  base_ = nullptr;
  bytes_ = 0;
  peer_bases_.clear();
}

std::size_t SymmetricWorkspace::gathered_capacity() const noexcept {
  return bytes_ > kSyncBytes ? bytes_ - kSyncBytes : 0;
}

void* SymmetricWorkspace::gathered() const noexcept {
  return static_cast<char*>(base_) + kSyncBytes;
}

const void* SymmetricWorkspace::peer_gathered(int peer) const noexcept {
  return peer_bases_[static_cast<std::size_t>(peer)] + kSyncBytes;
}

std::uint32_t* SymmetricWorkspace::sync_area() const noexcept {
  return static_cast<std::uint32_t*>(base_);
}

std::uint32_t* const* SymmetricWorkspace::peer_sync_areas_device() const noexcept {
  return static_cast<std::uint32_t* const*>(peer_pointers_.get());
}

void SymmetricWorkspace::allocate(std::size_t gathered_bytes) {
  release();
  const std::size_t bytes = round_up(kSyncBytes + gathered_bytes, 2u << 20);
  const std::size_t pointer_bytes = sizeof(void*) * static_cast<std::size_t>(world_);
  try {
    check_nccl(ncclMemAlloc(&base_, bytes), "ncclMemAlloc(symmetric workspace)", comm_);
    peer_pointers_.ensure(pointer_bytes, "device allocation (peer pointers)");
    peer_pointers_host_.ensure(pointer_bytes, "pinned allocation (peer pointers)");
  } catch (...) {
    release();
    throw;
  }
  bytes_ = bytes;
}

void SymmetricWorkspace::register_window(rt::StreamHandle stream, const BoundedWait& wait) {
  check_nccl(ncclCommWindowRegister(comm_, base_, bytes_, &window_, NCCL_WIN_DEFAULT),
             "ncclCommWindowRegister(symmetric workspace)", comm_);

  // The peers' bases as this process sees them: asked of the device, since
  // the window's mapping table lives there.
  auto* pointers = static_cast<void**>(peer_pointers_host_.get());
  const std::size_t pointer_bytes = sizeof(void*) * static_cast<std::size_t>(world_);
  gpu::check(
      enqueue_peer_pointers(window_, world_, static_cast<void**>(peer_pointers_.get()), stream),
      "peer pointer kernel launch");
  gpu::check(rt::memcpy_async(pointers, peer_pointers_.get(), pointer_bytes,
                              rt::Copy::device_to_host, stream),
             "copy (peer pointers)");
  // The sync area (whose peer pointers are the bases themselves) is zero on
  // this rank before the all-reduce below, which no rank leaves before every
  // rank has entered it: so no rank's first barrier writes into a peer's area
  // before that peer zeroed it.
  gpu::check(rt::memset_async(base_, 0, kSyncBytes, stream), "memset (sync area)");
  void* scratch = static_cast<char*>(base_) + kSyncBytes;
  check_nccl(ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, comm_, stream),
             "ncclAllReduce(workspace setup barrier)", comm_);
  gpu::check(rt::event_record(setup_done_.get(), stream), "event record (workspace setup)");
  wait(setup_done_.get(), "the symmetric workspace's set-up (peer pointers, setup barrier)");

  // This rank's own entry may be a second mapping of its buffer (NCCL's flat
  // window view); local work uses base_ itself.
  for (int p = 0; p < world_; ++p) peer_bases_.push_back(static_cast<char*>(pointers[p]));
  peer_bases_[static_cast<std::size_t>(rank_)] = static_cast<char*>(base_);
  for (std::size_t p = 0; p < peer_bases_.size(); ++p) {
    if (!peer_bases_[p]) {
      throw Error(ErrorCode::backend, "symmetric workspace: NCCL gave no address for rank " +
                                          std::to_string(p) + "'s window");
    }
  }
  ++generation_;
  core::log(core::LogLevel::info, rank_,
            "symmetric workspace: " + std::to_string(bytes_ >> 20) + " MiB per rank (" +
                std::to_string(gathered_capacity() >> 20) + " MiB gathered A + sync area), " +
                std::to_string(world_) + " ranks");
}

}  // namespace asynctp::nccl
