// The public entry points of asynctp/nccl.hpp.
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/nccl.hpp"
#include "bootstrap/device_choice.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/record_fields.hpp"
#include "bootstrap/tcp_rendezvous.hpp"
#include "core/log.hpp"
#include "core/rank_threads.hpp"
#include "cuda/nccl/environment_comm.hpp"
#include "cuda/nccl/nccl_check.hpp"
#include "cuda/nccl/nccl_comm.hpp"
#include "cuda/nccl/nccl_device_api.hpp"
#include "gpu/check.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/runtime.hpp"
#include "gpu/runtime_backend.hpp"

namespace asynctp::nccl {
namespace {

namespace rt = gpu::rt;
using bootstrap::host_name;
using bootstrap::parse_record;

[[noreturn]] void fail(const std::string& argument, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, argument + ": " + rule);
}

int device_count_or_throw() {
  int count = 0;
  const rt::Status e = rt::device_count(&count);
  if (e != rt::kSuccess) {
    rt::clear_last_error();
    throw Error(ErrorCode::backend, std::string("nccl: no usable ") + rt::kName +
                                        " driver or device (device count: " + rt::error_name(e) +
                                        ")");
  }
  return count;
}

std::string gpu_uuid(int device) {
  unsigned char uuid[16] = {};
  gpu::check(rt::device_uuid(device, uuid), "device properties (UUID)");
  std::string text = "GPU-";
  char byte[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", uuid[i]);
    text += byte;
  }
  return text;
}

std::string to_hex(const void* data, std::size_t bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) {
    const auto b = static_cast<const unsigned char*>(data)[i];
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// Rank 0's id as it came over the wire: anything but 2 * bytes hex digits is
// an Error, never another exception.
void from_hex(const std::string& hex, void* data, std::size_t bytes) {
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  bool ok = hex.size() == 2 * bytes;
  for (std::size_t i = 0; ok && i < bytes; ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    if (ok) static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  if (!ok) throw Error(ErrorCode::backend, "rendezvous: rank 0 sent a malformed NCCL unique id");
}

}  // namespace

std::string unavailable_reason(int world_size) {
  int count = 0;
  if (rt::device_count(&count) != rt::kSuccess) {
    rt::clear_last_error();
    return gpu::runtime_unavailable_reason(0);  // names the driver's error
  }
  if (count < world_size) {
    return std::to_string(world_size) + " ranks need " + std::to_string(world_size) +
           " GPUs; this process sees " + std::to_string(count);
  }
  for (int d = 0; d < world_size; ++d) {
    if (std::string why = gpu::runtime_unavailable_reason(d); !why.empty()) return why;
  }
  return "";
}

std::unique_ptr<Comm> wrap_nccl_comm(ncclComm* comm) {
  if (!comm) fail("comm", "must be an initialized ncclComm_t, got null");
  return std::make_unique<NcclComm>(comm, /*owns_comm=*/false);
}

std::unique_ptr<Comm> comm_from_environment(const EnvironmentOptions& options) {
  return comm_from_launch_info(bootstrap::launched_process_info(), options);
}

std::unique_ptr<Comm> comm_from_launch_info(const bootstrap::LaunchInfo& launch,
                                            const EnvironmentOptions& options) {
  const bootstrap::LaunchInfo* info = &launch;
  const int count = device_count_or_throw();
  int device = options.device;
  if (device >= count) {
    fail("options.device", "rank " + std::to_string(info->rank) + " would use GPU " +
                               std::to_string(device) + ", but this process sees " +
                               std::to_string(count) + " GPU(s)");
  }
  if (device < 0) {
    const bootstrap::DeviceChoice choice =
        bootstrap::choose_rank_device(count, info->local_rank, info->world_size);
    device = choice.device;
    if (!choice.note.empty()) core::log(core::LogLevel::info, info->rank, choice.note);
  }
  gpu::check(rt::set_device(device), "set device (the rank's GPU)");

  ncclUniqueId id{};
  if (info->rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::string record = "host=" + host_name() + "\ngpu=" + gpu_uuid(device) +
                       "\ndevice=" + std::to_string(device) + "\n";
  if (info->rank == 0) record += "id=" + to_hex(&id, sizeof id) + "\n";
  const std::vector<std::string> all =
      bootstrap::all_gather_records(*info, record, options.rendezvous_timeout_ms);

  std::map<std::string, int> owner;  // host + GPU -> first rank using it
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto fields = parse_record(all[r]);
    const std::string key = fields.count("host") && fields.count("gpu")
                                ? fields.at("host") + "/" + fields.at("gpu")
                                : "";
    const auto [it, inserted] = owner.emplace(key, static_cast<int>(r));
    if (!inserted) {
      fail("LOCAL_RANK", "ranks " + std::to_string(it->second) + " and " + std::to_string(r) +
                             " would both use " + fields.at("gpu") + " on host " +
                             fields.at("host") + "; each rank needs its own GPU");
    }
  }
  if (info->rank != 0) {
    const auto fields = parse_record(all.front());
    if (!fields.count("id")) {
      throw Error(ErrorCode::backend, "rendezvous: rank 0's record has no NCCL unique id");
    }
    from_hex(fields.at("id"), &id, sizeof id);
  }
  ncclComm_t comm = nullptr;
  require_device_api();
  check_nccl(ncclCommInitRank(&comm, info->world_size, id, info->rank), "ncclCommInitRank");
  try {
    return std::make_unique<NcclComm>(comm, /*owns_comm=*/true);
  } catch (...) {
    (void)ncclCommAbort(comm);
    throw;
  }
}

struct LocalGroup::State {
  std::vector<int> devices;
  std::vector<std::unique_ptr<NcclComm>> comms;
};

LocalGroup::LocalGroup(int world_size, std::vector<int> devices) {
  if (world_size < 1) {
    fail("world_size", "must be at least 1, got " + std::to_string(world_size));
  }
  const int count = device_count_or_throw();
  if (devices.empty()) {
    for (int d = 0; d < world_size; ++d) devices.push_back(d);
  }
  if (static_cast<int>(devices.size()) != world_size) {
    fail("devices", "must name one GPU per rank (" + std::to_string(world_size) + "), got " +
                        std::to_string(devices.size()));
  }
  for (std::size_t r = 0; r < devices.size(); ++r) {
    if (devices[r] < 0 || devices[r] >= count) {
      fail("devices", "rank " + std::to_string(r) + " names GPU " + std::to_string(devices[r]) +
                          ", but this process sees " + std::to_string(count) + " GPU(s)");
    }
    for (std::size_t q = 0; q < r; ++q) {
      if (devices[q] == devices[r]) {
        fail("devices", "ranks " + std::to_string(q) + " and " + std::to_string(r) +
                            " both name GPU " + std::to_string(devices[r]) +
                            "; each rank needs its own GPU (the loopback group of "
                            "asynctp/cuda.hpp puts virtual ranks on one GPU)");
      }
    }
  }
  require_device_api();
  std::vector<ncclComm_t> raw(static_cast<std::size_t>(world_size), nullptr);
  check_nccl(ncclCommInitAll(raw.data(), world_size, devices.data()), "ncclCommInitAll");
  auto state = std::make_unique<State>();
  state->devices = devices;
  state->comms.resize(raw.size());
  try {
    // Collective constructors: one thread per rank.
    core::run_on_rank_threads(world_size, [&](int r) {
      gpu::check(rt::set_device(devices[static_cast<std::size_t>(r)]), "set device (rank's GPU)");
      state->comms[static_cast<std::size_t>(r)] =
          std::make_unique<NcclComm>(raw[static_cast<std::size_t>(r)], /*owns_comm=*/true);
    });
  } catch (...) {
    for (std::size_t r = 0; r < raw.size(); ++r) {
      if (!state->comms[r]) (void)ncclCommAbort(raw[r]);
    }
    throw;
  }
  state_ = std::move(state);
}

LocalGroup::~LocalGroup() {
  if (!state_) return;
  // Finalizing is collective too: destroy the ranks from their own threads.
  core::run_on_rank_threads(world_size(), [&](int r) {
    (void)rt::set_device(state_->devices[static_cast<std::size_t>(r)]);
    state_->comms[static_cast<std::size_t>(r)].reset();
  });
}

int LocalGroup::world_size() const noexcept { return static_cast<int>(state_->comms.size()); }

Comm& LocalGroup::comm(int rank) {
  core::check_rank_argument(rank, world_size());
  return *state_->comms[static_cast<std::size_t>(rank)];
}

int LocalGroup::device(int rank) const {
  core::check_rank_argument(rank, world_size());
  return state_->devices[static_cast<std::size_t>(rank)];
}

void LocalGroup::enter_rank_thread(int rank) {
  gpu::check(rt::set_device(state_->devices[static_cast<std::size_t>(rank)]),
             "set device (rank's GPU)");
}

}  // namespace asynctp::nccl
