// Communicator handles: made from the CPU multi-process transport, from
// NCCL (a unique id, or the caller's ncclComm_t), destroyed, queried.
#include <cstring>
#include <memory>
#include <string>

#include "asynctp/c_api.h"
#include "asynctp/cpu.hpp"
#include "asynctp/error.hpp"
#include "capi/comm_handle.hpp"
#include "capi/guard.hpp"

#ifdef ASYNCTP_HAVE_NCCL_BACKEND
#include <cuda_runtime.h>
#include <nccl.h>

#include "asynctp/nccl.hpp"
#endif

namespace asynctp::capi {

Comm& comm_of(asynctpComm_t handle, const char* what) {
  if (handle == nullptr || !handle->comm) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": is NULL; make a communicator first (asynctp*CommInitRank)");
  }
  return *handle->comm;
}

void require_pointer(const void* pointer, const char* what) {
  if (pointer == nullptr) {
    throw Error(ErrorCode::invalid_argument, std::string(what) + ": must not be NULL");
  }
}

namespace {

void check_rank(int world_size, int rank) {
  if (world_size < 1) {
    throw Error(ErrorCode::invalid_argument,
                "world_size: must be at least 1, got " + std::to_string(world_size));
  }
  if (rank < 0 || rank >= world_size) {
    throw Error(ErrorCode::invalid_argument, "rank: must be in [0, world_size = " +
                                                 std::to_string(world_size) + "), got " +
                                                 std::to_string(rank));
  }
}

asynctpComm_t make_handle(std::unique_ptr<Comm> comm) {
  auto handle = std::make_unique<asynctpComm>();
  handle->comm = std::move(comm);
  return handle.release();
}

#ifdef ASYNCTP_HAVE_NCCL_BACKEND
static_assert(sizeof(ncclUniqueId) <= ASYNCTP_UNIQUE_ID_BYTES,
              "asynctpNcclUniqueId must hold an ncclUniqueId");

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    throw Error(ErrorCode::backend, std::string(what) + " failed: " + ncclGetErrorString(status) +
                                        " (" + ncclGetLastError(nullptr) + ")");
  }
}

void destroy_nccl_comm(void* comm) { (void)ncclCommDestroy(static_cast<ncclComm_t>(comm)); }
#else
[[noreturn]] void no_nccl() {
  throw Error(ErrorCode::unsupported,
              "NCCL: this asynctp library was built without the NCCL backend (it needs the CUDA "
              "backend and NCCL 2.28 or newer at build time); use the CPU transport "
              "(asynctpCpuCommInitRank) or a build with NCCL");
}
#endif

}  // namespace
}  // namespace asynctp::capi

using asynctp::capi::guarded;
using asynctp::capi::require_pointer;

extern "C" int asynctpHasNccl(void) {
#ifdef ASYNCTP_HAVE_NCCL_BACKEND
  return 1;
#else
  return 0;
#endif
}

static_assert(sizeof(asynctp::cpu::UniqueId) <= ASYNCTP_UNIQUE_ID_BYTES,
              "asynctpCpuUniqueId must hold an asynctp::cpu::UniqueId");

extern "C" asynctpResult_t asynctpCpuGetUniqueId(asynctpCpuUniqueId* unique_id) {
  return guarded([&] {
    require_pointer(unique_id, "unique_id");
    const asynctp::cpu::UniqueId id = asynctp::cpu::make_unique_id();
    std::memset(unique_id, 0, sizeof *unique_id);
    std::memcpy(unique_id->internal, &id, sizeof id);
  });
}

extern "C" asynctpResult_t asynctpCpuCommInitRank(asynctpComm_t* comm, int world_size,
                                                  const asynctpCpuUniqueId* unique_id, int rank,
                                                  int gemm_workers, int64_t setup_timeout_ms) {
  return guarded([&] {
    require_pointer(comm, "comm");
    *comm = nullptr;
    require_pointer(unique_id, "unique_id");
    asynctp::capi::check_rank(world_size, rank);
    asynctp::cpu::UniqueId id;
    std::memcpy(&id, unique_id->internal, sizeof id);
    asynctp::cpu::ProcessOptions options;
    options.gemm_workers = gemm_workers;
    if (setup_timeout_ms != 0) options.setup_timeout_ms = setup_timeout_ms;
    *comm = asynctp::capi::make_handle(
        asynctp::cpu::make_process_comm(id, world_size, rank, options));
  });
}

extern "C" asynctpResult_t asynctpNcclGetUniqueId(asynctpNcclUniqueId* unique_id) {
  return guarded([&] {
    require_pointer(unique_id, "unique_id");
#ifdef ASYNCTP_HAVE_NCCL_BACKEND
    ncclUniqueId id{};
    asynctp::capi::check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memset(unique_id, 0, sizeof *unique_id);
    std::memcpy(unique_id->internal, &id, sizeof id);
#else
    asynctp::capi::no_nccl();
#endif
  });
}

extern "C" asynctpResult_t asynctpNcclCommInitRank(asynctpComm_t* comm, int world_size,
                                                   const asynctpNcclUniqueId* unique_id, int rank,
                                                   int device) {
  return guarded([&] {
    require_pointer(comm, "comm");
    *comm = nullptr;
    require_pointer(unique_id, "unique_id");
    asynctp::capi::check_rank(world_size, rank);
#ifdef ASYNCTP_HAVE_NCCL_BACKEND
    const cudaError_t set = cudaSetDevice(device);
    if (set != cudaSuccess) {
      throw asynctp::Error(asynctp::ErrorCode::invalid_argument,
                           "device: cudaSetDevice(" + std::to_string(device) +
                               ") failed: " + cudaGetErrorString(set));
    }
    ncclUniqueId id;
    std::memcpy(&id, unique_id->internal, sizeof id);
    ncclComm_t nccl = nullptr;
    asynctp::capi::check_nccl(ncclCommInitRank(&nccl, world_size, id, rank), "ncclCommInitRank");
    auto handle = std::make_unique<asynctpComm>();
    handle->owned = nccl;
    handle->destroy_owned = asynctp::capi::destroy_nccl_comm;
    // From here the handle destroys the ncclComm_t on every path.
    handle->comm = asynctp::nccl::wrap_nccl_comm(nccl);
    *comm = handle.release();
#else
    (void)device;
    asynctp::capi::no_nccl();
#endif
  });
}

extern "C" asynctpResult_t asynctpCommFromNccl(asynctpComm_t* comm, void* nccl_comm) {
  return guarded([&] {
    require_pointer(comm, "comm");
    *comm = nullptr;
    require_pointer(nccl_comm, "nccl_comm");
#ifdef ASYNCTP_HAVE_NCCL_BACKEND
    *comm = asynctp::capi::make_handle(
        asynctp::nccl::wrap_nccl_comm(static_cast<ncclComm_t>(nccl_comm)));
#else
    asynctp::capi::no_nccl();
#endif
  });
}

extern "C" asynctpResult_t asynctpCommDestroy(asynctpComm_t comm) {
  return guarded([&] { delete comm; });
}

extern "C" asynctpResult_t asynctpCommRank(asynctpComm_t comm, int* rank) {
  return guarded([&] {
    const asynctp::Comm& c = asynctp::capi::comm_of(comm);
    require_pointer(rank, "rank");
    *rank = c.rank();
  });
}

extern "C" asynctpResult_t asynctpCommWorldSize(asynctpComm_t comm, int* world_size) {
  return guarded([&] {
    const asynctp::Comm& c = asynctp::capi::comm_of(comm);
    require_pointer(world_size, "world_size");
    *world_size = c.world_size();
  });
}

extern "C" asynctpResult_t asynctpCommBackend(asynctpComm_t comm, int* kind, const char** name) {
  return guarded([&] {
    const asynctp::Comm& c = asynctp::capi::comm_of(comm);
    if (kind) *kind = static_cast<int>(c.device_kind());
    if (name) *name = c.backend_name();
  });
}
