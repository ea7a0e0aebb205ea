// Which GPU a launched rank uses. Launchers say it two ways: every process
// sees all of the node's GPUs and LOCAL_RANK picks one (torchrun, mpirun), or
// each process sees only its own GPU through CUDA_VISIBLE_DEVICES (srun
// --gpus-per-task=1, mpirun wrappers that bind GPUs), where LOCAL_RANK still
// counts the node's processes but the one GPU is device 0. With one device
// visible the second is the only reading that can run, so it is taken; with
// several, LOCAL_RANK must name one of them, and guessing (say, LOCAL_RANK
// modulo the count) would put two ranks on one GPU. Two ranks that end up on
// the same GPU anyway (one GPU visible to every process) are refused later,
// when the ranks compare their GPUs' UUIDs in the rendezvous.
// Pure: the caller asks the runtime for the visible count.
#pragma once

#include <string>

namespace asynctp::bootstrap {

struct DeviceChoice {
  int device = 0;
  // Empty when the device is simply LOCAL_RANK; otherwise why it is not
  // (worth an INFO line: a rank whose LOCAL_RANK is 3 runs on device 0).
  std::string note;
};

// The device for a rank with `local_rank` (>= 0) in a job of `world_size`
// ranks, in a process that sees `visible_devices` GPUs. Throws
// Error(invalid_argument) naming LOCAL_RANK and the count when several GPUs
// are visible and LOCAL_RANK is not one of them, or when local_rank < 0;
// Error(backend) when no GPU is visible.
DeviceChoice choose_rank_device(int visible_devices, int local_rank, int world_size);

}  // namespace asynctp::bootstrap
