#!/usr/bin/env bash
# Runs on the device machine: bench/python_overhead.py on CUDA for two trees
# of the Python package in one call, alternated, so that a change to the
# package's hot path is measured on the same host (hosts differ by 2x in
# their per-call figures). The C ABI library is the carried bundle's.
#
#   scripts/device/python-overhead-ab.sh BEFORE_PYTHON_DIR [rounds, default 2]
#   e.g. BEFORE_PYTHON_DIR = .devbin/python-before/python (git archive of an
#   earlier commit's python/), the after side is ./python
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
source scripts/device/steps.sh
python=${ASYNCTP_PYTHON:-/opt/torch/.venv/bin/python}
before=$1 rounds=${2:-2}
export ASYNCTP_LIBRARY=$PWD/.devbin/gpu/libasynctp_c.so
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    dir=$before
    [ "$side" = after ] && dir=$PWD/python
    run_step "$side-$round" 120 env PYTHONPATH="$dir" "$python" bench/python_overhead.py \
      --device cuda --json "$OUT/$side-$round.json"
  done
done
print_summary " (python overhead, before = $before, after = ./python)"
for f in "$OUT"/*-[0-9].log; do echo "== $(basename "$f")"; grep -E "wall|cpu" "$f"; done
