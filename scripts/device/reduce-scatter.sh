#!/usr/bin/env bash
# Runs on the device machine (H200): matmul + reduce-scatter's checks and
# targets, each step in its own process bounded by `timeout`, logs under $OUT
# (one log per step), a summary last.
#   gpu-tests        every GPU test (both ops: the native kernels share code)
#   max-connections  the *MaxConnections* tests with CUDA_DEVICE_MAX_CONNECTIONS=1
#   nccl-rs          the NCCL transport's reduce-scatter tests (W = 1 here)
#   reduction-cost   the reduction kernel alone vs a device copy of its bytes
#   targets          `asynctp bench --op matmul-reduce-scatter`, W = 8, both
#                    loopback links, the row-parallel target shapes (--check
#                    on 8192 x 8192 x 1024), with each row's SM clock (--clocks)
# Build here first (scripts/build-device-bundle), then carry .devbin.
#
#   scripts/device/reduce-scatter.sh [step...]     default: every step
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
bin=${ASYNCTP_DEVBIN:-.devbin/gpu}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(gpu-tests max-connections nccl-rs reduction-cost targets)

source scripts/device/steps.sh

targets() {
  local shapes=("8192 8192 1024")
  for m in 4096 8192 16384; do
    for kn in "1024 8192" "3584 8192" "2048 5120"; do
      set -- $kn
      shapes+=("$m $2 $1")
    done
  done
  for shape in "${shapes[@]}"; do
    set -- $shape
    local check=()
    [ "$shape" = "8192 8192 1024" ] && check=(--check)
    echo "### M=$1 N=$2 k=$3"
    "$bin/asynctp" bench --op matmul-reduce-scatter --world-size 8 -m "$1" -n "$2" -k "$3" \
      --link both --iters 10 --warmup 2 --clocks "${check[@]}" || echo "### exit $?"
  done
}

for step in "${steps[@]}"; do
  case $step in
    gpu-tests) run_step gpu-tests 420 "$bin/asynctp_gpu_tests" --gtest_brief=1 ;;
    max-connections) run_step max-connections 240 env CUDA_DEVICE_MAX_CONNECTIONS=1 \
                 "$bin/asynctp_gpu_tests" --gtest_brief=1 --gtest_filter='*MaxConnections*' ;;
    nccl-rs) run_step nccl-rs 120 "$bin/asynctp_nccl_tests" --gtest_brief=1 \
                 --gtest_filter='NcclReduceScatter*' ;;
    reduction-cost) run_step reduction-cost 120 "$bin/asynctp_reduction_cost" ;;
    targets) export -f targets; export bin OUT; run_step targets 420 bash -c targets ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
print_summary ""
