#!/usr/bin/env bash
# Runs on the device machine (one GPU, about 3 minutes on an H200): measures
# what the planner's cost table needs (src/core/cost_table.hpp) and writes it
# to $OUT/cost-table.txt in the format the library reads, then prints a
# summary.
#   1. GEMMs: .devbin/gpu/native_kernel_bench --speed over a grid of shapes
#      (M 256..32768, N 1280..28672, K 1024..8192, B row and col): cuBLASLt
#      (the table's "cublas") and every native config, flags preset, W = 8,
#      round-robin in one process.
#   2. Fixed costs and the GEMMs' clocks: scripts/device/call-costs.sh (tiny
#      calls over a free link at W = 2, 4 and 8, both ops, and one
#      GEMM-bound call per op); scripts/fit_call_costs.py fits the table's
#      fixed lines to them (the model's prediction without fixed costs,
#      subtracted from each call: bench/planner_replay.cpp makes it) and
#      scales its GEMMs by the median ratio of this host's burst calls to
#      the sustained sweep (the clocks differ by 10-20 %: bench/NOTES.md).
#   3. The pcie link: bench over pcie at two sizes, W = 8: the gather's time
#      (T_decomposed - T_gemm - decomposed's tiny call) = latency + 7 chunks
#      / bandwidth.
# Build first, here: scripts/build-device-bundle; carry .devbin. Then commit
# the file as data/cost/<device>.txt (the embedded table) or point
# ASYNCTP_COST_TABLE at it.
#
#   scripts/device/calibrate.sh          GRID_M / GRID_N / GRID_K override the grid
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=.devbin/gpu
grid_m=${GRID_M:-"256 512 1024 2048 4096 8192 32768"}
grid_n=${GRID_N:-"1280 3584 8192 28672"}
grid_k=${GRID_K:-"1024 2048 8192"}
shapes=""
for m in $grid_m; do for n in $grid_n; do for k in $grid_k; do
  shapes+="${shapes:+,}${m}x${n}x${k}"
done; done; done
start=$(date +%s)
echo "# calibrate: $(head -n 1 "$OUT/device.txt"), $(date -u +%FT%TZ)"
# The library's configs use swizzles 1, 2 and 4 (src/cuda/native/async_input_gemm.cpp).
timeout 200 "$bin/native_kernel_bench" --speed --reps 20 --swizzles 1,2,4 --shapes "$shapes" \
  --json "$OUT/gemm.json" >"$OUT/gemm.log" 2>&1 || { echo "native_kernel_bench failed: $(tail -n 3 "$OUT/gemm.log")"; exit 1; }
echo "# gemms measured in $(( $(date +%s) - start )) s"

bench_json() {  # file, then asynctp bench arguments
  local file=$1; shift
  timeout 120 "$bin/asynctp" bench --iters 10 --warmup 2 --json "$@" >"$OUT/$file" \
    2>"$OUT/$file.err" || echo "asynctp bench $* failed: $(tail -n 1 "$OUT/$file.err")"
}
OUT=$OUT bash scripts/device/call-costs.sh >"$OUT/call-costs.log" 2>&1 ||
  echo "call-costs.sh failed: $(tail -n 1 "$OUT/call-costs.log")"
bench_json pcie-big.json --world-size 8 --link pcie -m 8192 -n 8192 -k 8192
bench_json pcie-small.json --world-size 8 --link pcie -m 8192 -n 8192 -k 2048

python3 scripts/device/cost_table_from_runs.py "$OUT" "$(head -n 1 "$OUT/device.txt")" &&
  python3 scripts/fit_call_costs.py "$bin/asynctp_planner_replay" "$OUT/cost-table-sweep.txt" \
    "$OUT/call-costs.txt" "$OUT/cost-table.txt" && echo "# wrote $OUT/cost-table.txt"
echo "# calibrate took $(( $(date +%s) - start )) s"
