#!/usr/bin/env bash
# Runs on the device machine (one GPU): one traced call per algorithm of two
# or more builds at the same shapes, taken apart by
# scripts/device/call_gaps.py (the lead, each chunk's tiles, every device
# step), so that where two builds' calls differ shows step by step. The
# sides run in turn per shape; a traced call runs slower than an untraced
# one, so compare the sides, not these spans against a bench's table.
#
#   SHAPES='LINK GBPS M N K LAYOUT;...' scripts/device/traced-sides.sh OP W ALGO SIDE...
#   SIDE: NAME=DIR, DIR holding an asynctp binary; ALGO: native, all, ...
#   e.g. SHAPES='arrival 400 8192 8192 1024 row' scripts/device/traced-sides.sh \
#          matmul-reduce-scatter 8 native main=.devbin/gpu pieces=.devbin/pieces
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
source scripts/device/steps.sh
op=$1 world=$2 algo=$3
shift 3
read_shapes
for shape in "${shapes[@]}"; do
  read_shape "$shape"
  for side in "$@"; do
    name=${side%%=*} dir=${side#*=}
    tag="$link-$m-$n-$k-$layout.$name"
    run_step "trace-$tag" 120 "$dir/asynctp" run --backend cuda --op "$op" --link "$link" \
      "${rate[@]}" --world-size "$world" -m "$m" -n "$n" -k "$k" --b-layout "$layout" \
      --algo "$algo" --iters 10 --warmup 3 --trace "$OUT/trace-$tag.json"
    run_step "gaps-$tag" 30 python3 scripts/device/call_gaps.py "$OUT/trace-$tag.json"
  done
done
print_summary " (traced sides: $op, W = $world, $algo)"
