#!/usr/bin/env bash
# Runs on the device machine (one GPU): `asynctp bench` of two or more
# builds (or flag sets) at the same shapes, alternated within each round so
# that every side sees the same clocks. Prints a table of the medians (ms),
# native / cuBLAS and the overlap efficiency last; each bench's JSON in $OUT.
#
#   SHAPES='LINK GBPS M N K LAYOUT;...' scripts/device/ab-bench.sh OP ROUNDS W SIDE...
#   SIDE: NAME=DIR[:EXTRA FLAGS], DIR holding an asynctp binary
#   e.g. SHAPES='arrival 1000000 8192 3000 4096 row' \
#        scripts/device/ab-bench.sh all-gather-matmul 2 8 before=.devbin/before \
#          after=.devbin/gpu 'after-nogathered=.devbin/gpu:--no-gathered'
# GBPS is the arrival link's rate (ignored over pcie).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
source scripts/device/steps.sh
op=$1 rounds=$2 world=$3
shift 3
read_shapes
for shape in "${shapes[@]}"; do
  read_shape "$shape"
  for round in $(seq 1 "$rounds"); do
    for side in "$@"; do
      name=${side%%=*} spec=${side#*=}
      dir=${spec%%:*} extra=()
      [ "$spec" != "$dir" ] && read -r -a extra <<<"${spec#*:}"
      tag="$op-$link-$m-$n-$k-$layout.$name.$round"
      run_step "$tag" 120 "$dir/asynctp" bench --op "$op" --link "$link" "${rate[@]}" \
        --world-size "$world" -m "$m" -n "$n" -k "$k" --b-layout "$layout" --iters 10 \
        --warmup 2 "${extra[@]}" --json
      cp "$OUT/$tag.log" "$OUT/$tag.json"
    done
  done
done
print_summary " ($op, W = $world, sides: $*)"
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
    m = re.match(r"(.*)\.([^.]+)\.(\d+)\.json", path.name)
    rows.setdefault(m.group(1), []).append(
        (m.group(2), int(m.group(3)), med.get("native"), med.get("pipelined"),
         med.get("decomposed"), link["t_gemm_ms"]))
print(f"{'shape':44} {'side':17} {'rnd':3} {'native':>8} {'pipel.':>8} {'decomp.':>8} "
      f"{'cuBLAS':>8} {'nat/cuB':>8} {'eff':>6}")
for shape, entries in rows.items():
    for side, rnd, nat, pip, dec, gemm in sorted(entries, key=lambda e: (e[1], e[0])):
        f = lambda x: f"{x:8.3f}" if x else "       -"
        ratio = f"{gemm / nat:8.3f}" if nat else "       -"
        eff = "     -"
        if nat and dec and gemm and dec > gemm:
            comm = dec - gemm  # bench::Overlap: T_comm = T_decomposed - T_gemm
            eff = f"{(comm + gemm - nat) / min(comm, gemm):6.2f}"
        print(f"{shape:44} {side:17} {rnd:3} {f(nat)} {f(pip)} {f(dec)} {f(gemm)} {ratio} {eff}")
EOF
