#!/usr/bin/env bash
# Runs on the device machine (one GPU): what reading the rank's own chunk in
# place (instead of copying it into the gathered A ahead of the GEMM) changes.
# Per shape and round, alternated so that both binaries see the same clocks:
# `asynctp bench` of the binary before the change, the binary after it, and
# the binary after it with --no-gathered (the calls ask for C alone, so the
# copy is not made at all). Shapes: fixed-cost.sh's (arrival at 1e6 GB/s, a
# link that costs nothing: the per-call fixed cost) and one over pcie.
# Prints a table of the medians (ms) last; each bench's JSON in $OUT.
#
#   scripts/device/local-chunk-ab.sh BEFORE_DIR [rounds, default 2] [W, default 8]
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
source scripts/device/steps.sh
before=$1 rounds=${2:-2} world=${3:-8}
after=.devbin/gpu
shapes=("arrival 8192 3000 4096 row" "arrival 12288 2560 5120 row" "arrival 24576 1280 8192 row"
        "arrival 6144 10240 8192 col" "pcie 8192 3000 4096 row")
for shape in "${shapes[@]}"; do
  read -r link m n k layout <<<"$shape"
  gbps=()
  [ "$link" = arrival ] && gbps=(--link-gbps 1000000)
  for round in $(seq 1 "$rounds"); do
    for side in before after after-nogathered; do
      bin=$after extra=()
      [ "$side" = before ] && bin=$before
      [ "$side" = after-nogathered ] && extra=(--no-gathered)
      tag="$link-$m-$n-$k-$layout-$side-$round"
      run_step "$tag" 120 "$bin/asynctp" bench --link "$link" "${gbps[@]}" --world-size "$world" \
        -m "$m" -n "$n" -k "$k" --b-layout "$layout" --iters 10 --warmup 2 "${extra[@]}" --json
      cp "$OUT/$tag.log" "$OUT/$tag.json"
    done
  done
done
print_summary " (own chunk in place, W = $world, before = $before)"
python3 - "$OUT" <<'EOF'
import json, pathlib, re, sys
rows = {}
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    text = path.read_text()
    start = re.search(r"^\{", text, re.M)
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start.start():])
    except (AttributeError, ValueError):
        print(f"{path.name}: no JSON")
        continue
    link = doc["links"][0]
    med = {a["algorithm"]: a.get("median_ms") for a in link["algorithms"]}
    m = re.match(r"(.*)-(before|after|after-nogathered)-(\d+)\.json", path.name)
    rows.setdefault(m.group(1), []).append(
        (m.group(2), m.group(3), med.get("native"), med.get("pipelined"), med.get("decomposed"),
         link["t_gemm_ms"]))
print(f"{'shape':32} {'side':17} {'rnd':3} {'native':>8} {'pipel.':>8} {'decomp.':>8} {'cuBLAS':>8} {'nat/cuBLAS':>10}")
for shape, entries in rows.items():
    for side, rnd, nat, pip, dec, gemm in sorted(entries, key=lambda e: (e[1], e[0])):
        f = lambda x: f"{x:8.3f}" if x else "       -"
        ratio = f"{gemm / nat:10.3f}" if nat else "         -"
        print(f"{shape:32} {side:17} {rnd:3} {f(nat)} {f(pip)} {f(dec)} {f(gemm)} {ratio}")
EOF
