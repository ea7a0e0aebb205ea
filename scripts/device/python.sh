#!/usr/bin/env bash
# Runs on the device machine (H200): the Python package against PyTorch
# there (/opt/torch/.venv; no pip registry: the package from python/ on
# PYTHONPATH, the C ABI library from the carried bundle through
# ASYNCTP_LIBRARY), one process with the NCCL transport:
#   python-cuda     tests/python/test_cuda.py: every algorithm forced against
#                   float64 beside torch.mm, a CUDA graph replayed 100 times,
#                   torch.compile(fullgraph=True), and bench/python_overhead.py's
#                   host time per call: the public op, torch.ops.asynctp.*, the
#                   C ABI call with and without building its descriptors
#                   (table in the log, figures in $OUT/python-report.json)
#   python-cpu      the CPU multi-process tests (W = 1..4) under this PyTorch
# Build here first (scripts/build-device-bundle: libasynctp_c.so into
# .devbin/gpu), then carry .devbin.
#
#   scripts/device/python.sh [step...]     default: every step
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
bin=${ASYNCTP_DEVBIN:-.devbin/gpu}
python=${ASYNCTP_PYTHON:-/opt/torch/.venv/bin/python}
export PYTHONPATH=$PWD/python ASYNCTP_LIBRARY=$PWD/$bin/libasynctp_c.so
export ASYNCTP_PYTHON_REPORT=$OUT/python-report.json
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(python-cuda python-cpu)

source scripts/device/steps.sh
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' \
  | tee "$OUT/python-torch.txt"

# pytest when that environment has it; the test files also run as scripts.
has_pytest() { "$python" -c 'import pytest' 2>/dev/null; }
for step in "${steps[@]}"; do
  case $step in
    python-cuda)
      if has_pytest; then
        run_step python-cuda 600 "$python" -m pytest -q -s tests/python/test_cuda.py
      else
        run_step python-cuda 600 "$python" tests/python/test_cuda.py
      fi ;;
    python-cpu)
      if has_pytest; then
        run_step python-cpu 600 "$python" -m pytest -q tests/python/test_cpu_processes.py
      else
        echo "=== python-cpu: skipped (no pytest in $python's environment)"
      fi ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
print_summary " (python)"
