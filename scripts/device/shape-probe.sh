#!/usr/bin/env bash
# Runs on the device machine (one GPU): takes one all-gather + matmul shape on
# the loopback group apart, to explain a planner-grid point where native is far
# from its prediction: every algorithm with the device timeline traced; native
# with each tile config forced and with the library tail; the same M and N at
# neighbouring K; and the native kernel alone (no link) on that shape.
#
#   scripts/device/shape-probe.sh M N K [W] [LINK] [GB/s] [row|col]
#   defaults: W 8, link arrival, 400 GB/s, B row-major
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=.devbin/gpu
m=$1 n=$2 k=$3 world=${4:-8} link=${5:-arrival} gbps=${6:-400} layout=${7:-row}
run() {  # label, then asynctp run arguments (environment first, via env)
  local label=$1; shift
  echo "=== $label"
  timeout 120 "$@" --backend cuda --world-size "$world" --link "$link" --link-gbps "$gbps" \
    --b-layout "$layout" --iters 5 2>&1 | tail -n 8
}
cli=("$bin/asynctp" run)
run "all, traced" "${cli[@]}" -m "$m" -n "$n" -k "$k" --algo all --trace "$OUT/trace-$m-$n-$k-$layout.json"
run "native, library tail" env ASYNCTP_NATIVE_TAIL=library "${cli[@]}" -m "$m" -n "$n" -k "$k" --algo native
# Tile sizes as ASYNCTP_TILE_M/N name them: rows per cluster (tile M x
# cluster M) by tile N; a config whose rows do not divide M / W is refused.
for tile in 64x128 64x256 128x128 256x128 256x256 512x160; do
  run "native, tile $tile" env ASYNCTP_TILE_M="${tile%x*}" ASYNCTP_TILE_N="${tile#*x}" \
    "${cli[@]}" -m "$m" -n "$n" -k "$k" --algo native
done
for other_k in $((k / 2)) $((k * 2)); do
  run "all, K $other_k" "${cli[@]}" -m "$m" -n "$n" -k "$other_k" --algo all
done
echo "=== the native kernel alone (no link), K $((k / 2)) $k $((k * 2))"
timeout 120 "$bin/native_kernel_bench" --speed --reps 20 --swizzles 1,2,4 --layouts "$layout" \
  --shapes "${m}x${n}x$((k / 2)),${m}x${n}x${k},${m}x${n}x$((k * 2))" 2>&1 | tail -n 60
