#!/usr/bin/env bash
# Runs on the device machine (one GPU): whether the rows of `asynctp bench`
# and its cuBLAS baseline (T_gemm) run at the same SM clocks. Each step is a
# process bounded by `timeout`, its log under $OUT, a summary last.
#   tests   the clock probe's tests (bench::ClockProbe, `--clocks` in the CLI)
#   bench   `asynctp bench --clocks`, W = 8, both loopback links, at the
#           shapes in SHAPES ('OP M N K;...', OP rs or ag; default three
#           row-parallel reduce-scatter shapes and the all-gather's 8192^3):
#           each row's clock after its rounds beside the baseline's
#
#   scripts/device/clocks.sh [step...]     default: tests bench
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=${ASYNCTP_DEVBIN:-.devbin/gpu}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests bench)
source scripts/device/steps.sh
IFS=';' read -r -a shapes <<<"${SHAPES:-rs 8192 8192 3584;rs 8192 8192 1024;rs 8192 5120 2048;ag 8192 8192 8192}"

for step in "${steps[@]}"; do
  case $step in
    tests)
      run_step probe-tests 120 "$bin/asynctp_gpu_tests" --gtest_brief=1 --gtest_filter='ClockProbe.*'
      run_step cli-clocks 200 env ASYNCTP_CLI="$PWD/$bin/asynctp" "$bin/asynctp_cli_tests" \
        --gtest_filter='CliCudaRun.Clocks*' ;;
    bench)
      for shape in "${shapes[@]}"; do
        read -r op m n k <<<"$shape"
        [ "$op" = rs ] && op=matmul-reduce-scatter || op=all-gather-matmul
        run_step "bench-$op-${m}x${n}x${k}" 240 "$bin/asynctp" bench --op "$op" --world-size 8 \
          -m "$m" -n "$n" -k "$k" --link both --clocks
      done ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
print_summary ""
