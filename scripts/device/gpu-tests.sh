#!/usr/bin/env bash
# Runs on the device machine (H200): the GPU test binary (tests/gpu,
# asynctp_gpu_tests) with its XML report and log under $OUT.
# Build first, here, and copy the binary (plus the non-system shared
# libraries it needs, e.g. OpenBLAS, into .devbin/gpu/lib) to .devbin/gpu/;
# carry .devbin.
#
#   scripts/device/gpu-tests.sh [gtest args...]   e.g. --gtest_filter='NativeGemmTimeout.*'
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu-tests-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if [ -d .devbin/gpu/lib ]; then
  # Copies of host libraries the device image may lack (OpenBLAS and its deps).
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.devbin/gpu/lib
fi

nvidia-smi -L
bin=.devbin/gpu/asynctp_gpu_tests
ldd "$bin" | grep "not found" && echo "(shared libraries missing: the run will fail)"
"$bin" --gtest_output=xml:"$OUT/gpu-tests.xml" "$@" 2>&1 | tee "$OUT/gpu-tests.log"
status=${PIPESTATUS[0]}
echo "asynctp_gpu_tests exit $status"
exit "$status"
