#!/usr/bin/env bash
# Runs on the device machine (H200) in ONE call: the native kernel's tests,
# its speed sweep against cuBLASLt (C++, one process), the native kernel
# against torch.mm and PyTorch's _async_input_mm interleaved in one Python
# process (through .devbin/gpu/libasynctp_native.so), and the merged tables
# (printed last). Full logs go to $OUT.
# Build first, here: scripts/build-device-bundle (CMake targets
# asynctp_native_kernel_bench and asynctp_native_kernel_capi); carry .devbin.
#
#   scripts/device/native-kernel.sh [bench args...]   e.g. --kernels a,b --swizzles 1,4
#   NK_SKIP_TORCH=1 ...                               skip the PyTorch part
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
export PYTHONUNBUFFERED=1

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  nvidia-smi -q -d CLOCK,PERFORMANCE | head -60
} >>"$OUT/device.txt" 2>&1

status=0
./.devbin/gpu/native_kernel_bench --json "$OUT/native.json" "$@" >"$OUT/native.log" 2>&1 || status=$?
echo "native_kernel_bench exit $status"
if [ -z "${NK_SKIP_TORCH:-}" ]; then
  timeout 240 python3 bench/native_kernel_torch.py --lib .devbin/gpu/libasynctp_native.so \
    --json "$OUT/torch.json" >"$OUT/torch.log" 2>&1 ||
    echo "torch comparison exit $?"
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >>"$OUT/device.txt" 2>&1

# Short table last: failures, the tests' key lines, the merged speed table.
grep -E "^(FAIL|FATAL)" "$OUT/native.log" | head -20
sed -n '/== gating/,/== timeout/p' "$OUT/native.log" | head -30
sed -n '/== timeout/,/== speed/p' "$OUT/native.log" | head -12
grep -E "^(OK|FAILED):" "$OUT/native.log"
sed -n '/== summary/,$p' "$OUT/native.log" | grep -E "^(B (row|col):|  [a-z])"
grep -E "FAIL|WRONG|failed" "$OUT/torch.log" | head -5
python3 bench/native_kernel_report.py "$OUT/native.json" "$OUT/torch.json" | tee "$OUT/report.md"
exit $status
