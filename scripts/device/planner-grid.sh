#!/usr/bin/env bash
# Runs on the device machine (one GPU): the headline shapes of the multi-GPU
# benchmark (global M in 2048..32768, N per rank 1280/3584/7168,
# K = 8192, and 8192^3) on W virtual ranks of one GPU (the loopback group),
# to check the planner where no multi-GPU machine is lent: per shape and
# link, native, pipelined and decomposed, the planner's pick, and whether the
# pick is the fastest and not slower than decomposed, and the cost model's
# predicted / measured ratio of each algorithm. The links are models (pcie:
# the copy engines over the host link; arrival: timed releases at
# --link-gbps), not NVLink between GPUs.
# Verdict per point: ok when auto's pick is within 3 % of the fastest and at
# most 2 % slower than decomposed. Auto's pick is the planner's (its forced
# row's time); with -t, auto's calls take the measured choice (--tune) and
# its own row's time and algorithm are judged, against the forced rows of
# the same run. The last lines count the points that pass
# and give the distribution of predicted / measured. $OUT/grid-measured.txt
# gets every point's measured times (scripts/device/grid_points.py), which
# bench/planner_replay.cpp ranks under another planner or cost table.
#
# The default grid: 41 shapes (global M from 256 W to 32768, N 1280..28672,
# K 1024..8192, B row- and column-major), from decode-like rows where one
# GEMM after the gather should win, through transfer-bound ones where
# per-chunk GEMMs or native's tail decide, to large compute-bound ones where
# native should win; 12288x2560x5120 is a shape users reported. A shape is
# MxNxK, M may be written 256W (256 rows per rank), and :col makes B
# column-major; a shape that comes twice at some W is run once (at W = 8,
# 256Wx1280x8192:col is 2048x1280x8192:col): at least 40 points at every W.
# A device call runs at most 10 minutes: split the grid by -w, -l or -g
# across calls.
#
#   scripts/device/planner-grid.sh [-t] [-w "W..."] [-l "LINK..."] [-g "GB/s..."] [-p "OP..."] [iters]
#   defaults: -w "8 4 2", -l "pcie arrival", -g "100 400 1600",
#   -p all-gather-matmul, 5 iterations (five times that where 2 M N K <
#   2e11); SHAPES="MxNxK[:col] ..." replaces the shapes; ASYNCTP_GRID_BIN
#   names the bundle whose asynctp runs (default .devbin/gpu), so that two
#   builds can be compared slice by slice in one call; ASYNCTP_GRID_WARMUP=0
#   skips the untimed warm-up run (tests/python/test_planner_grid.py runs
#   the script with the CPU build's CLI)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
worlds="8 4 2"
links="pcie arrival"
speeds="100 400 1600"
ops="all-gather-matmul"
tune=()
while getopts "tw:l:g:p:" opt; do
  case $opt in
    t) tune=(--tune) ;;
    w) worlds=$OPTARG ;;
    l) links=$OPTARG ;;
    g) speeds=$OPTARG ;;
    p) ops=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
iters=${1:-5}
shapes="256Wx1280x1024 256Wx7168x1024:col 256Wx28672x1024 256Wx1280x8192:col 256Wx7168x8192
256Wx28672x8192:col
2048x1280x4096 2048x3584x8192:col 2048x14336x4096 2048x1280x8192:col 2048x3584x4096
2048x14336x8192:col
4096x1280x1024 4096x2560x8192:col 4096x8192x1024 4096x28672x8192:col 4096x1280x8192
4096x2560x1024:col 4096x8192x8192 4096x28672x1024:col
8192x1280x2048 8192x3584x8192:col 8192x8192x2048 8192x28672x8192:col 8192x1280x8192
8192x3584x2048:col 8192x8192x8192 8192x28672x2048:col
16384x1280x4096 16384x5120x8192:col 16384x14336x4096 16384x1280x8192:col 16384x5120x4096
16384x14336x8192:col
32768x1280x1024 32768x2560x8192:col 32768x7168x1024 32768x1280x8192:col 32768x2560x1024
32768x7168x8192:col
12288x2560x5120"
shapes=${SHAPES:-$shapes}

# An idle GPU's first calls run at lower clocks: one untimed run first, so
# that the grid's first point is timed as the others are
# (ASYNCTP_GRID_WARMUP=0 skips it, where no GPU runs the grid: the tests).
bin=${ASYNCTP_GRID_BIN:-.devbin/gpu}
if [ "${ASYNCTP_GRID_WARMUP:-1}" != 0 ]; then
  timeout 60 "$bin/asynctp" run --backend cuda --world-size 8 -m 8192 -n 8192 -k 8192 \
    --algo decomposed --iters 20 >/dev/null 2>&1
fi

points="$OUT/grid-points.txt"
: >"$points"
echo "# planner-grid: ops {$ops}, W in {$worlds}, links {$links} (arrival at {$speeds} GB/s), $iters iterations (5x where 2 M N K < 2e11), $(date -u +%FT%TZ)"
echo "# ms per rank (median); pred/meas = the cost model's predicted / measured time (n: native, p: pipelined, d: decomposed)"
printf '%-4s %-2s %-12s %-20s %9s %9s %9s %-10s %7s %-17s %s\n' op W link shape native pipelined \
  decomposed pick speedup "pred/meas n/p/d" verdict
for op in $ops; do
for world in $worlds; do
  for link in $links; do
    link_speeds="-"
    [ "$link" = arrival ] && link_speeds=$speeds
    for gbps in $link_speeds; do
    for spec in $shapes; do
      layout=row
      [ "${spec#*:}" != "$spec" ] && layout=${spec#*:}
      IFS=x read -r m n k <<<"${spec%%:*}"
      [ "${m%W}" != "$m" ] && m=$(( ${m%W} * world ))
      shape="${m}x${n}x${k}"
      [ "$layout" = col ] && shape+=":col"
      case " ${seen:-} " in *" $op-$world-$link-$gbps-$shape "*) continue ;; esac
      seen="${seen:-} $op-$world-$link-$gbps-$shape"
      tag="$link"
      extra=(--b-layout "$layout")
      if [ "$gbps" != "-" ]; then tag="$link-$gbps"; extra+=(--link-gbps "$gbps"); fi
      json="$OUT/grid-$op-w$world-$tag-${shape/:/-}.json"
      # Calls under ~0.3 ms (2 M N K < 2e11) move 5-10 % from one call to the
      # next, more than the verdict's 3 %: five times the iterations there.
      point_iters=$iters
      (( 2 * m * n * k < 200000000000 )) && point_iters=$((iters * 5))
      started=$(date +%s.%N)
      if ! timeout 120 "$bin/asynctp" run --backend cuda --op "$op" --world-size "$world" \
        --link "$link" "${extra[@]}" -m "$m" -n "$n" -k "$k" --iters "$point_iters" --warmup 2 "${tune[@]}" --json \
        >"$json" 2>"$json.err"; then
        echo "$op $world $tag $shape failed: $(tail -n 1 "$json.err")"
        continue
      fi
      # Each point's wall time (the process's setup included), to see where a
      # slice's minutes go; the setup steps over 1.5 s are in $json.err.
      awk -v from="$started" -v to="$(date +%s.%N)" -v point="$op $world $tag $shape" \
        'BEGIN { printf "%s %.1f s\n", point, to - from }' >>"$OUT/grid-wall.txt"
      python3 scripts/device/grid_points.py "$json" >>"$OUT/grid-measured.txt"
      python3 - "$json" "$op" "$world" "$tag" "$shape" "$points" <<'PY'
import json, sys
path, op, world, link, shape, points = sys.argv[1:]
r = json.load(open(path))
rows = [a for a in r["algorithms"] if a["available"]]
auto = [a for a in rows if a["name"].startswith("auto")]
rows = [a for a in rows if not a["name"].startswith("auto")]
t = {a["algorithm"]: a["median_ms"] for a in rows}
ratio = {a["algorithm"]: a["predicted_ms"] / a["median_ms"] for a in rows
         if a.get("predicted_ms") and a["median_ms"]}
# With --tune the auto row is what auto's calls ran; else the planner's pick.
pick = auto[0]["algorithm"] if auto else r["planner"]["algorithm"]
t_auto = auto[0]["median_ms"] if auto else t.get(pick)
best = min(t.values())
speedup = t["decomposed"] / t_auto if t_auto else float("nan")
ok = t_auto is not None and t_auto <= 1.03 * best and t_auto <= 1.02 * t["decomposed"]
fmt = lambda a: "%9.3f" % t[a] if a in t else "%9s" % "-"
rat = "/".join("%.2f" % ratio[a] if a in ratio else "-" for a in ("native", "pipelined", "decomposed"))
short = "ag" if op.startswith("all") else "rs"
print("%-4s %-2s %-12s %-20s %s %s %s %-10s %6.2fx %-17s %s" % (short, world, link, shape,
      fmt("native"), fmt("pipelined"), fmt("decomposed"), pick, speedup, rat, "ok" if ok else "MISS"))
with open(points, "a") as f:
    f.write("%d %s\n" % (ok, " ".join("%.4f" % v for v in ratio.values())))
PY
    done
    done
  done
done
done
python3 - "$points" <<'PY'
import statistics, sys
ok, ratios = [], []
for line in open(sys.argv[1]):
    w = line.split()
    ok.append(int(w[0]))
    ratios += [float(v) for v in w[1:]]
if not ok:
    sys.exit("# no point ran")
print("# verdict: %d of %d points ok (%.0f %%; target >= 95 %%)" % (sum(ok), len(ok), 100.0 * sum(ok) / len(ok)))
if ratios:
    q = statistics.quantiles(ratios, n=10) if len(ratios) >= 2 else ratios * 9
    print("# predicted / measured over %d timings: median %.2f, p10 %.2f, p90 %.2f, min %.2f, max %.2f" % (
        len(ratios), statistics.median(ratios), q[0], q[-1], min(ratios), max(ratios)))
else:
    print("# predicted / measured: no predictions (no cost table for this device?)")
PY
# With -t: each miss with the times the tuner chose from, and the verdict
# by auto's pick at its forced row beside its own row's.
if ((${#tune[@]})); then
  python3 scripts/device/grid_verdicts.py --misses "$OUT"
fi
