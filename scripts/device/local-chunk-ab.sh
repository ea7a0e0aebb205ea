#!/usr/bin/env bash
# Runs on the device machine (one GPU): what reading the rank's own chunk in
# place (instead of copying it into the gathered A ahead of the GEMM) changes.
# Per shape and round, alternated (ab-bench.sh): the binary before the
# change, the binary after it, and the binary after it with --no-gathered
# (the calls ask for C alone, so the copy is not made at all). Shapes:
# fixed-cost.sh's (arrival at 1e6 GB/s, a link that costs nothing: the
# per-call fixed cost) and one over pcie.
#
#   scripts/device/local-chunk-ab.sh BEFORE_DIR [rounds, default 2] [W, default 8]
set -uo pipefail
cd "$(dirname "$0")/../.."
before=$1 rounds=${2:-2} world=${3:-8}
SHAPES="arrival 1000000 8192 3000 4096 row;arrival 1000000 12288 2560 5120 row;\
arrival 1000000 24576 1280 8192 row;arrival 1000000 6144 10240 8192 col;pcie 0 8192 3000 4096 row" \
  exec bash scripts/device/ab-bench.sh all-gather-matmul "$rounds" "$world" "before=$before" \
  after=.devbin/gpu 'after-nogathered=.devbin/gpu:--no-gathered'
