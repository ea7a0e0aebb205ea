// One rank's tensors on its GPU, as the CLI's GPU backends (loopback, NCCL
// local group, one rank per process) hold them: a stream, device copies of
// the inputs, device outputs, and the views the library is called with.
#pragma once

#include <string>

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

}  // namespace asynctp::tool
