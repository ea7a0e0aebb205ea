#!/usr/bin/env bash
# Runs on the device machine (one GPU, about half a minute): each
# algorithm's fixed cost per call, measured where nothing else costs
# anything: `asynctp run` of a tiny problem (256 rows per rank, N = K = 256:
# GEMMs of a few microseconds) over a link that costs nothing (arrival at
# 10^6 GB/s), both ops, W = 2, 4 and 8, every algorithm. What is left of
# such a call is its launches, events, waits and joins on this host, as a
# call of the planner grid pays them (the same process, the same bursts).
# Then one GEMM-bound call per op, for the ratio of this host's burst GEMMs
# to the table's sustained ones.
# Writes $OUT/call-costs.txt, one line per run (scripts/device/grid_points.py);
# scripts/fit_call_costs.py fits a cost table to it.
#
#   scripts/device/call-costs.sh [iters]        default 20 iterations
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
iters=${1:-20}
: >"$OUT/call-costs.txt"
for op in all-gather-matmul matmul-reduce-scatter; do
  for w in 2 4 8; do
    json="$OUT/call-$op-w$w.json"
    if timeout 60 .devbin/gpu/asynctp run --backend cuda --op "$op" --world-size "$w" \
      --link arrival --link-gbps 1000000 -m $((256 * w)) -n 256 -k 256 --iters "$iters" \
      --warmup 3 --json >"$json" 2>"$json.err"; then
      python3 scripts/device/grid_points.py "$json" | tee -a "$OUT/call-costs.txt"
    else
      echo "$op W = $w failed: $(tail -n 1 "$json.err")"
    fi
  done
  # One GEMM-bound call per op (8192 x 8192 x 8192, k 2048 per rank for the
  # reduce-scatter, W = 8): how this host's calls, run in bursts, compare
  # with the table's GEMMs, measured in a sustained sweep at other clocks.
  k=8192
  [ "$op" = matmul-reduce-scatter ] && k=2048
  json="$OUT/call-$op-gemm.json"
  if timeout 60 .devbin/gpu/asynctp run --backend cuda --op "$op" --world-size 8 \
    --link arrival --link-gbps 1000000 -m 8192 -n 8192 -k "$k" --iters 10 --warmup 3 \
    --json >"$json" 2>"$json.err"; then
    python3 scripts/device/grid_points.py "$json" | tee -a "$OUT/call-costs.txt"
  else
    echo "$op 8192 x 8192 x $k failed: $(tail -n 1 "$json.err")"
  fi
done
