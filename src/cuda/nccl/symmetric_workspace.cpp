#include "cuda/nccl/symmetric_workspace.hpp"

#include <nccl_device.h>

#include <string>

#include "asynctp/error.hpp"
#include "core/log.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/nccl/device_kernels.hpp"
#include "cuda/nccl/nccl_check.hpp"

namespace asynctp::nccl {
namespace {

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

void SymmetricWorkspace::release() noexcept {
  if (window_) (void)ncclCommWindowDeregister(comm_, window_);
  if (base_) (void)ncclMemFree(base_);
  if (peer_sync_device_) (void)cudaFree(peer_sync_device_);
  window_ = nullptr;
  base_ = nullptr;
  peer_sync_device_ = nullptr;
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
  return static_cast<std::uint32_t* const*>(peer_sync_device_);
}

void SymmetricWorkspace::ensure(std::size_t gathered_bytes) {
  if (base_ && gathered_bytes <= gathered_capacity()) return;
  release();
  const std::size_t bytes = round_up(kSyncBytes + gathered_bytes, 2u << 20);
  check_nccl(ncclMemAlloc(&base_, bytes), "ncclMemAlloc(symmetric workspace)", comm_);
  bytes_ = bytes;
  check_nccl(ncclCommWindowRegister(comm_, base_, bytes, &window_, NCCL_WIN_COLL_SYMMETRIC),
             "ncclCommWindowRegister(symmetric workspace, NCCL_WIN_COLL_SYMMETRIC)", comm_);

  // The peers' bases as this process sees them: asked of the device, since
  // the window's mapping table lives there.
  cuda::check_cuda(cudaMalloc(&peer_sync_device_, sizeof(void*) * static_cast<std::size_t>(world_)),
                   "cudaMalloc(peer pointers)");
  cuda::check_cuda(
      enqueue_peer_pointers(window_, world_, static_cast<void**>(peer_sync_device_), nullptr),
      "peer pointer kernel launch");
  std::vector<void*> bases(static_cast<std::size_t>(world_));
  cuda::check_cuda(cudaMemcpy(bases.data(), peer_sync_device_, sizeof(void*) * bases.size(),
                              cudaMemcpyDeviceToHost),
                   "cudaMemcpy(peer pointers)");
  // This rank's own entry may be a second mapping of its buffer (NCCL's flat
  // window view); local work uses base_ itself.
  for (void* b : bases) peer_bases_.push_back(static_cast<char*>(b));
  peer_bases_[static_cast<std::size_t>(rank_)] = static_cast<char*>(base_);
  for (std::size_t p = 0; p < peer_bases_.size(); ++p) {
    if (!peer_bases_[p]) {
      release();
      throw Error(ErrorCode::backend, "symmetric workspace: NCCL gave no address for rank " +
                                          std::to_string(p) + "'s window");
    }
  }
  // The peer sync-area pointers are the bases themselves (sync area first).
  cuda::check_cuda(cudaMemset(base_, 0, kSyncBytes), "cudaMemset(sync area)");
  cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize(workspace setup)");

  // Every rank's sync area is zero before any rank's first barrier writes
  // into it: a host-synchronous all-reduce of nothing orders the two.
  void* scratch = static_cast<char*>(base_) + kSyncBytes;
  check_nccl(ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, comm_, nullptr),
             "ncclAllReduce(workspace setup barrier)", comm_);
  cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize(workspace setup barrier)");
  ++generation_;
  core::log(core::LogLevel::info, rank_,
            "symmetric workspace: " + std::to_string(bytes >> 20) + " MiB per rank (" +
                std::to_string(gathered_bytes >> 20) + " MiB gathered A + sync area), " +
                std::to_string(world_) + " ranks");
}

}  // namespace asynctp::nccl
