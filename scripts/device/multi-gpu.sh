#!/usr/bin/env bash
# Runs on a device machine with several GPUs (nvidia-h200-x2,
# -x8) everything those runs ask for, in one call, each step bounded by
# `timeout`, logs under $OUT, a summary last. Build here first
# (scripts/build-device-bundle) and carry .devbin.
#   machine    nvidia-smi, nvidia-smi topo -m, the NCCL version: how the GPUs link
#   peer-copy  do peer pulls need SMs? (PeerCopy* tests: a copy from the other GPU
#              beside a grid on every SM, the probe and the native kernel's)
#   tests      asynctp_nccl_tests: W = 2, 4, 8 as one process driving every GPU
#              and as one process per rank (suites above the GPU count skip)
#   launcher   `asynctp run --check` as one process per GPU under torchrun
#   bench      `asynctp bench --link nccl` at W on the headline shapes (global M
#              in {2048..32768}, K 8192, N per rank in {1280, 3584, 7168}) and
#              8192^3 (that one with --check)
#   torch      PyTorch's fused_all_gather_matmul (default and native) and the
#              NCCL + torch.mm baseline on the same shapes (bench/torch_fused_ag_mm.py)
#
#   scripts/device/multi-gpu.sh [-w W] [step...]   default W: every GPU; steps: all
#   SHAPES=MxNxK,... and ITERS=N override the shapes and iterations (e.g. a
#   short rehearsal of the mechanics with -w 1 on a one-GPU machine).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=.devbin/gpu
world=$(nvidia-smi -L | grep -c '^GPU')
if [ "${1:-}" = "-w" ]; then world=$2; shift 2; fi
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(machine peer-copy tests launcher bench torch)
iters=${ITERS:-10}
shapes="8192x8192x8192"
for m in 2048 4096 8192 16384 32768; do
  for n in 1280 3584 7168; do shapes+=",${m}x${n}x8192"; done
done
shapes=${SHAPES:-$shapes}
launch() { python3 -m torch.distributed.run --standalone --nproc-per-node "$world" "$@"; }

source scripts/device/steps.sh

machine() {
  nvidia-smi
  nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version())'
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

bench_shapes() {
  local first=1
  for shape in ${shapes//,/ }; do
    IFS=x read -r m n k <<<"$shape"
    local check=()
    [ $first -eq 1 ] && check=(--check)
    first=0
    echo "### $shape"
    "$bin/asynctp" bench --link nccl --world-size "$world" -m "$m" -n "$n" -k "$k" \
      --iters "$iters" "${check[@]}" | grep -E '^(nccl|# nccl|# check)'
  done
}

# `timeout` runs programs, not shell functions: the function steps run in a
# child bash that inherits them.
export bin world shapes iters
export -f machine bench_shapes launch
for step in "${steps[@]}"; do
  case $step in
    machine) run_step machine 60 bash -c machine ;;
    peer-copy) run_step peer-copy 300 bash -c '"$bin/asynctp_nccl_tests" --gtest_filter="PeerCopy*";
                 a=$?; "$bin/asynctp_gpu_tests" --gtest_filter="PeerCopyNativeGrid.*" && exit $a' ;;
    tests) run_step tests 420 "$bin/asynctp_nccl_tests" --gtest_brief=1 ;;
    launcher) run_step launcher 240 bash -c 'launch --no-python "$bin/asynctp" run -m 8192 \
                -n 2048 -k 2048 --check' ;;
    bench) run_step bench 540 bash -c bench_shapes ;;
    torch) run_step torch 540 bash -c 'launch bench/torch_fused_ag_mm.py --shapes "$shapes" \
             --iters "$iters"' ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
print_summary " (W = $world)"
