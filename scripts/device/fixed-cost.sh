#!/usr/bin/env bash
# Runs on the device machine (one GPU): the per-call cost of native that is
# not the kernel, on the shapes where native's whole call trailed one cuBLAS
# GEMM of the gathered problem with a link that costs nothing. Per shape:
# `asynctp bench` over arrival at 1e6 GB/s (native / pipelined / decomposed
# against T_gemm, same rounds), then one traced native call, taken apart by
# scripts/device/call_gaps.py (the lead before the first tile, the kernel's
# tiles, the tail after the last, and every device step between).
#
#   scripts/device/fixed-cost.sh [W [FLAG...]]   (default W 8; FLAGs go to
#                                                 every bench and run, e.g.
#                                                 --no-gathered)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
source scripts/device/steps.sh
bin=.devbin/gpu
world=${1:-8}
shift $(($# > 0 ? 1 : 0))
extra=("$@")
shapes=("8192 3000 4096 row" "12288 2560 5120 row" "24576 1280 8192 row" "6144 10240 8192 col")
for shape in "${shapes[@]}"; do
  read -r m n k layout <<<"$shape"
  tag="$m-$n-$k-$layout"
  run_step "bench-$tag" 120 "$bin/asynctp" bench --link arrival --link-gbps 1000000 \
    --world-size "$world" -m "$m" -n "$n" -k "$k" --b-layout "$layout" --iters 10 --warmup 2 \
    "${extra[@]}"
  run_step "trace-$tag" 120 "$bin/asynctp" run --backend cuda --link arrival --link-gbps 1000000 \
    --world-size "$world" -m "$m" -n "$n" -k "$k" --b-layout "$layout" --algo native \
    --iters 5 --trace "$OUT/trace-$tag.json" "${extra[@]}"
  run_step "gaps-$tag" 30 python3 scripts/device/call_gaps.py "$OUT/trace-$tag.json"
done
print_summary " (fixed costs, W = $world)"
