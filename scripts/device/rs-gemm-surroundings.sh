#!/usr/bin/env bash
# Runs on the device machine (one GPU): the reduce-scatter GEMM (rs_...)
# beside the all-gather one of the same tile and cuBLASLt, timed alone and
# in each of the loopback call's surroundings (native_kernel_bench's
# --free-sms, --poll [--poll-gbps], --placement), each setting its own
# process, the whole sequence twice so that each setting's spread shows
# (and how far the device's clocks drift under the sustained load). Prints one line per
# (setting, round, shape, kernel): median ms; full logs in $OUT.
#
#   BIN=.devbin/gpu scripts/device/rs-gemm-surroundings.sh KERNELS SHAPES
#   e.g. ... coop_128x256x64_c2x1_brow,rs_coop_128x256x64_c2x1_brow 8192x8192x1024,8192x8192x3584
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=${BIN:-.devbin/gpu}
kernels=$1 shapes=$2
settings=("alone:" "free1:--free-sms 1" "free1-poll:--free-sms 1 --poll"
          "free1-model:--free-sms 1 --poll --poll-gbps 400"
          "placement:--placement" "all:--free-sms 1 --poll --poll-gbps 400 --placement")
for round in 1 2; do
  for setting in "${settings[@]}"; do
    name=${setting%%:*} flags=${setting#*:}
    log="$OUT/$name.$round.log"
    # shellcheck disable=SC2086
    timeout 120 "$bin/native_kernel_bench" --speed --reps 20 --swizzles 1 --layouts row \
      --kernels "$kernels" --shapes "$shapes" $flags >"$log" 2>&1 || echo "$name.$round: exit $?"
    awk -v s="$name" -v r="$round" '/^# M=/ {shape = $2 $3 $4}
      (/_s1 +row/ && !/auto:/) || /cublasLt +row/ {
        printf "%-10s %d %-20s %-30s grid %3s %s\n", s, r, shape, $1, $4, $5}' "$log"
  done
done
