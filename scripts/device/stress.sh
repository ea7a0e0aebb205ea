#!/usr/bin/env bash
# On the device: the randomized stress on the CUDA loopback backend
# (ASYNCTP_STRESS_CALLS calls, default 1,000) and the timeout tests whose
# messages it matches. Needs .devbin/gpu (scripts/build-device-bundle).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
bin=${ASYNCTP_DEVBIN:-.devbin/gpu}
calls=${ASYNCTP_STRESS_CALLS:-1000}
ASYNCTP_STRESS_CALLS=$calls "$bin/asynctp_gpu_tests" --gtest_filter='LoopbackStress.*' \
  >"$OUT/stress-loopback.log" 2>&1
echo "loopback stress rc=$?"
"$bin/asynctp_gpu_tests" --gtest_filter='*LoopbackTimeout*:*NativeGemmTimeout*:*LoopbackRefusedHooks*' \
  >"$OUT/stress-timeouts.log" 2>&1
echo "timeout tests rc=$?"
grep -h "stress (" "$OUT/stress-loopback.log"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) " "$OUT"/stress-*.log
