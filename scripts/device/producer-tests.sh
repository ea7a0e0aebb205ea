#!/usr/bin/env bash
# Runs on the device machine (H200): the producer-beside-a-full-grid tests
# (tests/gpu/producer_full_grid_test.cpp) in two processes:
#   1. Producer* with the default hardware queues (the max-connections tests
#      skip themselves there);
#   2. ProducerMaxConnections.* with CUDA_DEVICE_MAX_CONNECTIONS=1, which must
#      be set before the CUDA context exists, hence a second process.
# Logs and XML reports go to $OUT. Every test bounds its waits (kernel
# timeout + host deadline that aborts), and each process is also wrapped in
# `timeout` so the script itself always ends.
# Build first, here, and copy the binary (plus the non-system shared
# libraries it needs into .devbin/gpu/lib) to .devbin/gpu/; carry .devbin.
#
#   scripts/device/producer-tests.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/producer-tests-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if [ -d .devbin/gpu/lib ]; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.devbin/gpu/lib
fi

nvidia-smi -L 2>&1 | tee "$OUT/device.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$OUT/device.txt" 2>&1
bin=.devbin/gpu/asynctp_gpu_tests
ldd "$bin" | grep "not found" && echo "(shared libraries missing: the run will fail)"

status=0
echo "=== run 1: Producer* (default CUDA_DEVICE_MAX_CONNECTIONS) ==="
unset CUDA_DEVICE_MAX_CONNECTIONS
timeout 150 "$bin" --gtest_filter='Producer*' --gtest_output=xml:"$OUT/producer.xml" 2>&1 |
  tee "$OUT/producer.log"
s1=${PIPESTATUS[0]}
echo "run 1 exit $s1"
[ "$s1" -ne 0 ] && status=$s1

echo "=== run 2: ProducerMaxConnections.* with CUDA_DEVICE_MAX_CONNECTIONS=1 ==="
CUDA_DEVICE_MAX_CONNECTIONS=1 timeout 100 "$bin" --gtest_filter='ProducerMaxConnections.*' \
  --gtest_output=xml:"$OUT/producer-max-connections.xml" 2>&1 |
  tee "$OUT/producer-max-connections.log"
s2=${PIPESTATUS[0]}
echo "run 2 exit $s2"
[ "$s2" -ne 0 ] && status=$s2

echo "=== outcomes ==="
grep -h -E "OUTCOME|D2D beside full grid|grid [0-9]+ CTAs|graph:|replays|HANG|FAILED|PASSED|SKIPPED \]" \
  "$OUT/producer.log" "$OUT/producer-max-connections.log" | head -80
exit "$status"
