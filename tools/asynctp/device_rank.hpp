// One rank's tensors on its GPU, as the CLI's GPU backends (loopback, NCCL
// local group, one rank per process) hold them: a stream, device copies of
// the inputs, device outputs, and the views the library is called with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "device_buffers.hpp"
#include "rank_data.hpp"

namespace asynctp::tool {

struct DeviceRank {
  // Allocates on the current device (`device`, for the views) and uploads
  // the inputs of `host`; `who` names the rank in errors ("rank 3's ").
  DeviceRank(const RankData& host, int device, const std::string& who);

  // The host outputs (poisoned by the caller) onto the device.
  void upload_outputs(const RankData& host);
  // The device outputs into the host ones.
  void download_outputs(const RankData& host);

  Stream stream;
  DeviceBuffer a, b, c, gathered;
  RankViews views;
};

// The ranks a GPU backend holds on the device (all W in one process, or the
// one a launcher gave this process) beside the host data they mirror: what
// the CLI's three GPU backends share. Each rank's part is made, filled and
// freed on the thread that drives that rank's GPU, so the per-rank calls take
// the rank and the backend runs them on the right thread.
class HeldRanks {
 public:
  explicit HeldRanks(int world_size) : ranks_(static_cast<std::size_t>(world_size)) {}

  // The host data of every rank; kept by reference until the next bind.
  void bind(std::vector<RankData>& host) noexcept { host_ = &host; }
  // Allocates rank `rank`'s tensors on `device` (current) and uploads its inputs.
  void place(int rank, int device);
  void release(int rank) noexcept { ranks_[index(rank)].reset(); }

  // Throws std::logic_error for a rank this process has not placed.
  RankViews views(int rank) const;
  // nullptr for a rank this process has not placed.
  void* stream(int rank) const noexcept;

  // Poisons every rank's host outputs (once, before the per-rank uploads).
  void poison_host();
  void upload_outputs(int rank);
  void download_outputs(int rank);

 private:
  static std::size_t index(int rank) noexcept { return static_cast<std::size_t>(rank); }
  std::vector<RankData>* host_ = nullptr;
  std::vector<std::unique_ptr<DeviceRank>> ranks_;
};

}  // namespace asynctp::tool
