#include "bootstrap/device_choice.hpp"

#include <string>

#include "asynctp/error.hpp"

namespace asynctp::bootstrap {

DeviceChoice choose_rank_device(int visible_devices, int local_rank, int world_size) {
  const std::string local = std::to_string(local_rank);
  const std::string visible = std::to_string(visible_devices);
  if (visible_devices < 1) {
    throw Error(ErrorCode::backend,
                "no GPU is visible to this process (is CUDA_VISIBLE_DEVICES empty or wrong?)");
  }
  if (local_rank < 0) {
    throw Error(ErrorCode::invalid_argument, "LOCAL_RANK: must be at least 0, got " + local);
  }
  if (local_rank < visible_devices) return {local_rank, ""};
  if (visible_devices == 1) {
    return {0, "LOCAL_RANK " + local +
                   " but this process sees one GPU (the launcher gave each process its own, "
                   "e.g. CUDA_VISIBLE_DEVICES from srun --gpus-per-task=1): using it, device 0"};
  }
  throw Error(ErrorCode::invalid_argument,
              "LOCAL_RANK: " + local + " names GPU " + local + ", but this process sees " +
                  visible + " GPUs (devices 0 to " + std::to_string(visible_devices - 1) +
                  ") in a job of " + std::to_string(world_size) +
                  " ranks: run at most one rank per GPU, or give each process one GPU "
                  "(CUDA_VISIBLE_DEVICES)");
}

}  // namespace asynctp::bootstrap
