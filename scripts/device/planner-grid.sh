#!/usr/bin/env bash
# Runs on the device machine (one GPU): the headline shapes of the multi-GPU
# benchmark (global M in 2048..32768, N per rank 1280/3584/7168,
# K = 8192, and 8192^3) on W virtual ranks of one GPU (the loopback group),
# to check the planner where no multi-GPU machine is lent: per shape and
# link, native, pipelined and decomposed, the planner's pick, and whether the
# pick is the fastest and not slower than decomposed. The links are models
# (pcie: the copy engines over the host link; arrival: timed releases at
# --link-gbps), not NVLink between GPUs.
#
#   scripts/device/planner-grid.sh [-w "W..."] [-l "LINK..."] [iters]
#   defaults: -w "8 4", -l "pcie arrival", 10 iterations; SHAPES="MxNxK ..."
#   replaces the shapes
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
worlds="8 4"
links="pcie arrival"
while getopts "w:l:" opt; do
  case $opt in
    w) worlds=$OPTARG ;;
    l) links=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
iters=${1:-10}
shapes="8192x8192x8192"
for m in 2048 4096 8192 16384 32768; do
  for n in 1280 3584 7168; do shapes+=" ${m}x${n}x8192"; done
done
shapes=${SHAPES:-$shapes}

echo "# planner-grid: W in {$worlds}, links {$links}, $iters iterations, $(date -u +%FT%TZ)"
echo "# ms per rank (median); pick = the planner's algorithm; ok: pick within 3% of the fastest and not slower than decomposed"
printf '%-2s %-7s %-16s %9s %9s %9s %-10s %7s %s\n' W link shape native pipelined decomposed \
  pick speedup verdict
for world in $worlds; do
  for link in $links; do
    for shape in $shapes; do
      IFS=x read -r m n k <<<"$shape"
      json="$OUT/grid-w$world-$link-$shape.json"
      if ! timeout 120 .devbin/gpu/asynctp run --backend cuda --world-size "$world" --link "$link" \
        -m "$m" -n "$n" -k "$k" --iters "$iters" --warmup 2 --json >"$json" 2>"$json.err"; then
        echo "$world $link $shape failed: $(tail -n 1 "$json.err")"
        continue
      fi
      python3 - "$json" "$world" "$link" "$shape" <<'PY'
import json, sys
path, world, link, shape = sys.argv[1:]
r = json.load(open(path))
t = {a["algorithm"]: a["median_ms"] for a in r["algorithms"] if a["available"]}
pick = r["planner"]["algorithm"]
best = min(t.values())
speedup = t["decomposed"] / t[pick] if pick in t else float("nan")
ok = pick in t and t[pick] <= 1.03 * best and t[pick] <= 1.03 * t["decomposed"]
fmt = lambda a: "%9.3f" % t[a] if a in t else "%9s" % "-"
print("%-2s %-7s %-16s %s %s %s %-10s %6.2fx %s" % (world, link, shape, fmt("native"),
      fmt("pipelined"), fmt("decomposed"), pick, speedup, "ok" if ok else "CHECK"))
PY
    done
  done
done
