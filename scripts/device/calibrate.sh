#!/usr/bin/env bash
# Runs on the device machine (one GPU, about 3 minutes on an H200): measures
# what the planner's cost table needs (src/core/cost_table.hpp) and writes it
# to $OUT/cost-table.txt in the format the library reads, then prints a
# summary.
#   1. GEMMs: .devbin/gpu/native_kernel_bench --speed over a grid of shapes
#      (M 256..32768, N 1280..28672, K 1024..8192, B row and col): cuBLASLt
#      (the table's "cublas") and every native config, flags preset, W = 8,
#      round-robin in one process.
#   2. Fixed costs: `asynctp bench` over a link that costs nothing (arrival,
#      10^6 GB/s) at W = 2 and 8, both ops. bench times each algorithm and
#      one cuBLAS GEMM of the whole problem (T_gemm) in the same rounds, so
#      at the same clocks: an algorithm's fixed cost is its time less T_gemm
#      scaled by the sweep's ratio of that algorithm's GEMMs to the whole
#      cuBLAS GEMM (native: its kernel's config; pipelined: W chunk GEMMs;
#      the reduce-scatter also less its reduction). Subtracting the sweep's
#      GEMM times from a separate run's call does not work: the sweep holds
#      the card busy for a minute, a call runs in a burst, and the clocks
#      differ by more than the fixed cost. The two world sizes split it into
#      per call and per chunk.
#   3. The pcie link: bench over pcie at two sizes, W = 8: the gather's time
#      (T_decomposed - T_gemm - decomposed's fixed cost) = latency + 7 chunks
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
free="--link arrival --link-gbps 1000000 -m 8192 -n 8192"
for w in 2 8; do
  bench_json "fixed-ag-w$w.json" --world-size "$w" $free -k 8192
  bench_json "fixed-rs-w$w.json" --world-size "$w" $free -k 2048 --op matmul-reduce-scatter
done
bench_json pcie-big.json --world-size 8 --link pcie -m 8192 -n 8192 -k 8192
bench_json pcie-small.json --world-size 8 --link pcie -m 8192 -n 8192 -k 2048

python3 scripts/device/cost_table_from_runs.py "$OUT" "$(head -n 1 "$OUT/device.txt")"
echo "# calibrate took $(( $(date +%s) - start )) s"
