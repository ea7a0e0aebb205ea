#!/usr/bin/env bash
# Runs on the device machine (H200): everything the CUDA backend needs
# checked there, each step in its own process bounded by `timeout`, logs and
# XML reports under $OUT, a summary last.
#   gpu-tests          every GPU test (native kernel, producer, loopback backend)
#   nccl-tests         the NCCL transport's tests (W > GPUs skip themselves)
#   max-connections    the tests that need CUDA_DEVICE_MAX_CONNECTIONS=1 (read
#                      when the CUDA context is made, hence its own process)
#   cli-gpu            the CLI tests that need a GPU (run/bench on cuda)
#   readme-run         the README's quick-start run, on the GPU
#   bench              `asynctp bench --check` (8192^3, both loopback links)
#   signal-costs       bench/signal_costs.cpp: what each signalling mechanism costs
#   arrival-sweep      the arrival link alone at 100, 400, 1600 and 10^6 GB/s
#                      (how native's overlap changes with the link's speed)
#   trace              the device-timeline tests, then `asynctp run --trace`
#                      of both ops (W = 8, pcie, every algorithm): the traces
#                      in $OUT/trace-*.json, and scripts/device/trace_cost.py's
#                      table: each algorithm's untraced median against its
#                      traced call's device span (what tracing costs)
# Build here first (scripts/build-device-bundle puts the binaries and the
# OpenBLAS libraries in .devbin/gpu), then carry .devbin.
#
#   scripts/device/cuda-backend.sh [step...]     default: every step
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
# ASYNCTP_DEVBIN names another bundle (e.g. a build of an earlier commit, to
# compare before and after in one device call).
bin=${ASYNCTP_DEVBIN:-.devbin/gpu}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(gpu-tests nccl-tests max-connections cli-gpu readme-run bench)

source scripts/device/steps.sh

for step in "${steps[@]}"; do
  case $step in
    gpu-tests) run_step gpu-tests 420 "$bin/asynctp_gpu_tests" --gtest_brief=1 ;;
    nccl-tests) run_step nccl-tests 200 "$bin/asynctp_nccl_tests" --gtest_brief=1 ;;
    max-connections) run_step max-connections 240 env CUDA_DEVICE_MAX_CONNECTIONS=1 \
                 "$bin/asynctp_gpu_tests" --gtest_brief=1 \
                 --gtest_filter='*MaxConnections.*' ;;
    cli-gpu) run_step cli-gpu 240 env ASYNCTP_CLI="$PWD/$bin/asynctp" "$bin/asynctp_cli_tests" \
                 --gtest_filter='CliCudaRun.*:CliBench.*' ;;
    readme-run) run_step readme-run 240 "$bin/asynctp" run --world-size 8 -m 8192 -n 2048 \
                 -k 2048 --check ;;
    bench) run_step bench 300 "$bin/asynctp" bench --check ;;
    signal-costs) run_step signal-costs 120 "$bin/asynctp_signal_costs" ;;
    arrival-sweep)
      for gbps in 100 400 1600 1000000; do
        run_step "arrival-$gbps" 120 "$bin/asynctp" bench --link arrival --link-gbps "$gbps"
      done ;;
    trace)
      run_step trace-tests 300 "$bin/asynctp_gpu_tests" --gtest_brief=1 \
                 --gtest_filter='DeviceTimeline/LoopbackTrace.*'
      for op in all-gather-matmul matmul-reduce-scatter; do
        run_step "trace-$op" 300 sh -c "\"$bin/asynctp\" run --backend cuda --op $op \
                 --link pcie -m 8192 -n 4096 -k 4096 --algo all --iters 20 --json \
                 --trace \"$OUT/trace-$op.json\" > \"$OUT/run-$op.json\" && \
                 python3 scripts/device/trace_cost.py \"$OUT/run-$op.json\" \"$OUT/trace-$op.json\""
      done ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
print_summary ""
