#!/usr/bin/env bash
# Runs on the device machine: the same checks and the 8192^3 benchmark on two
# bundles in one call, so that a restructuring can be shown to change nothing
# (tests as before, figures within the spread). The bundles are directories
# of binaries built by scripts/build-device-bundle (the current tree,
# .devbin/gpu) and, e.g., a build of an earlier commit (.devbin/before).
#
#   scripts/device/before-after.sh BEFORE_DIR AFTER_DIR [bench rounds, default 2]
# With ASYNCTP_BEFORE_AFTER=bench only the benchmark rounds run (the suites of
# the after side run elsewhere in the same call, e.g. cuda-backend.sh);
# ASYNCTP_BENCH_ARGS replaces the rounds' `--check` (a float64 reference of
# 8192^3 takes about a minute of host time per round).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
source scripts/device/steps.sh
before=$1 after=$2 rounds=${3:-2}
if [ "${ASYNCTP_BEFORE_AFTER:-}" != bench ]; then
  for side in before after; do
    bin=${!side}
    run_step "$side-gpu-tests" 300 "$bin/asynctp_gpu_tests" --gtest_brief=1
    run_step "$side-nccl-tests" 200 "$bin/asynctp_nccl_tests" --gtest_brief=1
    run_step "$side-max-conn" 120 env CUDA_DEVICE_MAX_CONNECTIONS=1 "$bin/asynctp_gpu_tests" \
      --gtest_brief=1 --gtest_filter='LoopbackMaxConnections.*:ProducerMaxConnections.*'
    run_step "$side-cli-gpu" 120 env ASYNCTP_CLI="$PWD/$bin/asynctp" "$bin/asynctp_cli_tests" \
      --gtest_filter='CliCudaRun.*:CliBench.*'
  done
fi
# Alternate the two so that both see the same clocks.
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    bin=${!side}
    run_step "$side-bench-$round" 200 "$bin/asynctp" bench ${ASYNCTP_BENCH_ARGS:---check}
  done
done
print_summary " (before = $before, after = $after)"
for f in "$OUT"/*-gpu-tests.log "$OUT"/*-nccl-tests.log; do
  echo "$(basename "$f"): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$f" | tr '\n' ' ')"
done
