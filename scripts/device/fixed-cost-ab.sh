#!/usr/bin/env bash
# Runs on the device machine (one GPU): the all-gather's per-call fixed cost
# before and after a change, at fixed-cost.sh's shapes (arrival at 1e6 GB/s,
# a link that costs nothing, so native's call against one cuBLAS GEMM of the
# gathered problem is all fixed cost): both binaries without the gathered A
# (the kernel's own part) and the new one with it, alternated (ab-bench.sh).
#
#   scripts/device/fixed-cost-ab.sh BEFORE_DIR [rounds, default 2] [W, default 8]
set -uo pipefail
cd "$(dirname "$0")/../.."
before=$1 rounds=${2:-2} world=${3:-8}
SHAPES="arrival 1000000 8192 3000 4096 row;arrival 1000000 12288 2560 5120 row;\
arrival 1000000 24576 1280 8192 row;arrival 1000000 6144 10240 8192 col" \
  exec bash scripts/device/ab-bench.sh all-gather-matmul "$rounds" "$world" \
  "before-nogathered=$before:--no-gathered" 'after-nogathered=.devbin/gpu:--no-gathered' \
  after=.devbin/gpu
