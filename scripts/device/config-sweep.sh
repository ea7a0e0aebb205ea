#!/usr/bin/env bash
# Runs on the device machine: `asynctp bench --link arrival` on the shapes of
# the default benchmark with the planner's config and with one forced config
# (ASYNCTP_TILE_M/_N), to decide the planner's rule from sustained, in-process
# measurements (bench/NOTES.md v8). One line per run: shape, config, native,
# pipelined, cuBLAS (ms per rank).
#   scripts/device/config-sweep.sh "TILE_M TILE_N" [iters]
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
forced=($1)
iters=${2:-10}
shapes="8192x8192x8192"
for m in 8192 16384 32768; do
  for nk in 1280x8192 7168x8192 8192x3584 8192x28672; do shapes+=" ${m}x${nk}"; done
done
for shape in $shapes; do
  IFS=x read -r m n k <<<"$shape"
  for cfg in auto forced; do
    envs=()
    [ "$cfg" = forced ] && envs=(ASYNCTP_TILE_M="${forced[0]}" ASYNCTP_TILE_N="${forced[1]}")
    log="/tmp/sweep-$shape-$cfg.log"
    env "${envs[@]}" .devbin/gpu/asynctp bench --link arrival -m "$m" -n "$n" -k "$k" \
      --iters "$iters" --warmup 2 >"$log" 2>&1 || { echo "$shape $cfg failed"; tail -2 "$log"; }
    awk -v s="$shape" -v c="$cfg" '$1=="arrival" {t[$2]=$3}
      END {printf "%-18s %-6s native %7s pipelined %7s cublas %7s cublas/native %.3f\n",
           s, c, t["native"], t["pipelined"], t["cublas"], t["cublas"]/t["native"]}' "$log"
  done
done
