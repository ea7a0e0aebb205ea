#!/usr/bin/env bash
# Runs on the device machine (one GPU): matmul + reduce-scatter before and
# after a change, W = 8 loopback, alternated (ab-bench.sh): arrival at
# 400 GB/s at the row-parallel shapes of M 8192 (k 1024 link-bound, k 3584
# GEMM-bound, n 5120) and pcie at k 1024; then one traced call of every
# algorithm of the new binary at 8192 x 8192 x 1024 over arrival, taken
# apart by call_gaps.py.
#
#   scripts/device/rs-ab.sh BEFORE_DIR [rounds, default 2] [NAME=DIR...]
#   (NAME=DIR: more sides, e.g. a variant's binary)
set -uo pipefail
cd "$(dirname "$0")/../.."
before=$1 rounds=${2:-2}
shift $(($# > 1 ? 2 : 1))
SHAPES="arrival 400 8192 8192 1024 row;arrival 400 8192 8192 3584 row;\
arrival 400 8192 5120 2048 row;pcie 0 8192 8192 1024 row" \
  bash scripts/device/ab-bench.sh matmul-reduce-scatter "$rounds" 8 "before=$before" \
  after=.devbin/gpu "$@"
source scripts/device/env.sh >/dev/null
.devbin/gpu/asynctp run --op matmul-reduce-scatter --backend cuda --link arrival \
  --link-gbps 400 --world-size 8 -m 8192 -n 8192 -k 1024 --iters 5 \
  --trace "$OUT/trace-rs-8192-8192-1024.json" >"$OUT/trace-rs.log" 2>&1
tail -n 20 "$OUT/trace-rs.log"
python3 scripts/device/call_gaps.py "$OUT/trace-rs-8192-8192-1024.json"
