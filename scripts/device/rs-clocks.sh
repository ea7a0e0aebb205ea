#!/usr/bin/env bash
# Runs on the device machine (one GPU): the SM clock, power and throttle
# reasons (nvidia-smi, every 20 ms) while the reduce-scatter GEMM runs alone
# (native_kernel_bench, back to back, cuBLASLt beside it) and while the op
# runs on the loopback group (`asynctp run --algo native`, arrival link:
# native's row and the decomposed baseline's, in rounds; then decomposed
# alone), each phase long enough for ~100 samples. Tells whether the grid
# runs slower in the call than alone because the card runs at other clocks
# there (the call's untimed placement GEMMs and its reduction pass draw power
# too) or at the same clocks. Prints per phase: the tools' own times, then
# the samples' median / min SM clock, median power, and the throttle reasons
# seen.
#
#   BIN=.devbin/gpu scripts/device/rs-clocks.sh [MxNxK]     default 8192x8192x3584
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=${BIN:-.devbin/gpu}
shape=${1:-8192x8192x3584}
IFS=x read -r m n k <<<"$shape"
samples="$OUT/clock-samples.csv"
fields=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits -lms 20 >"$samples" 2>&1 &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
marks="$OUT/phases.txt"
: >"$marks"
phase() {  # NAME COMMAND...: the phase's start and end (epoch seconds) into $marks
  local name=$1
  shift
  local start
  start=$(date +%s.%N)
  "$@" >"$OUT/$name.log" 2>&1 || echo "$name: exit $?"
  echo "$name $start $(date +%s.%N)" >>"$marks"
}
sleep 1
phase idle sleep 1
phase alone timeout 120 "$bin/native_kernel_bench" --speed --reps 3000 --swizzles 1 --layouts row \
  --kernels rs_coop_128x256x64_c2x1_brow --shapes "$shape"
phase idle2 sleep 1
phase call timeout 200 "$bin/asynctp" run --backend cuda --op matmul-reduce-scatter --world-size 8 \
  --link arrival --link-gbps 400 --algo native -m "$m" -n "$n" -k "$k" --iters 100 --warmup 2
phase idle3 sleep 1
phase call-decomposed timeout 200 "$bin/asynctp" run --backend cuda --op matmul-reduce-scatter \
  --world-size 8 --link arrival --link-gbps 400 --algo decomposed -m "$m" -n "$n" -k "$k" \
  --iters 100 --warmup 2
sleep 0.5
kill $sampler 2>/dev/null
wait $sampler 2>/dev/null

echo "# $(head -n 1 "$OUT/device.txt"), shape $shape, $(date -u +%FT%TZ)"
echo "## the tools' times (ms)"
awk '/^# M=/ {shape = $2 $3 $4} /_s1 +row/ || /cublasLt +row/ {print "alone:", shape, $0}' \
  "$OUT/alone.log"
grep -E '^ *(native|decomposed|auto)' "$OUT/call.log" "$OUT/call-decomposed.log" | sed 's/^/call: /'
echo "## clocks per phase (samples every 20 ms)"
python3 - "$samples" "$marks" <<'EOF'
import sys, datetime, statistics
samples, marks = sys.argv[1], sys.argv[2]
rows = []
for line in open(samples):
    parts = [p.strip() for p in line.split(',')]
    if len(parts) < 5:
        continue
    try:
        t = datetime.datetime.strptime(parts[0], '%Y/%m/%d %H:%M:%S.%f').timestamp()
        rows.append((t, float(parts[1]), float(parts[2]), float(parts[3]), parts[4]))
    except ValueError:
        continue
print(f"{'phase':16s} {'n':>4s} {'SM MHz med':>10s} {'min':>6s} {'power W med':>11s} {'max':>6s} {'temp':>5s}  reasons")
for line in open(marks):
    name, start, end = line.split()
    # The sampler's timestamps are local wall time, as date +%s is.
    inside = [r for r in rows if float(start) + 0.2 <= r[0] <= float(end) - 0.1]
    if not inside:
        print(f"{name:16s} no samples")
        continue
    sm = [r[1] for r in inside]
    pw = [r[2] for r in inside]
    reasons = sorted({r[4] for r in inside})
    print(f"{name:16s} {len(inside):4d} {statistics.median(sm):10.0f} {min(sm):6.0f} "
          f"{statistics.median(pw):11.0f} {max(pw):6.0f} {statistics.median(r[3] for r in inside):5.0f}  "
          + ' '.join(reasons))
EOF
