#!/usr/bin/env bash
# Runs on the device machine (H200): compute-sanitizer over a short selection
# of the GPU tests of both ops, one tool per step, each in its own process
# bounded by `timeout`; logs under $OUT, a summary last. A step fails on any
# error the tool reports (--error-exitcode) as well as on a failing test.
#   memcheck    out-of-bounds and misaligned accesses, leaks of device memory
#   racecheck   shared-memory races (the native kernel's pipeline stages)
#   synccheck   invalid uses of __syncthreads / barriers
#   initcheck   reads of device memory never written (opt-in: not a default),
#               then its control; initcheck-control runs the control alone,
#               initcheck-rs the reduce-scatter's case alone with its first
#               reports in full (the tool does not count TMA stores as
#               initialization: the reduce-scatter's shipped partials, which
#               nothing else writes, report as never written;
#               InitcheckControl.CopyOfRowsOnlyTmaStoresWrote shows it)
# The selection (small shapes: the tools slow kernels 10-100x): both ops'
# loopback correctness cases at W = 2 on both links (every algorithm and
# dtype), the native kernel's gating, one graph capture of each op, and the
# thousand-replay test of each op and algorithm cut to the first replays by
# the tools' speed (it still checks the first and last against float64 and
# bitwise). compute-sanitizer does not run on every runtime (gVisor refuses
# the device: /work/.library/device/KINDS.md); the probe step says so and the
# others are then skipped, not failed.
# Each tool's step is bounded at 280 s: a device call runs at most 10
# minutes, so give one call one or two tools.
# Build here first (scripts/build-device-bundle), then carry .devbin.
#
#   scripts/device/sanitize.sh [tool...]      default: memcheck racecheck synccheck
# ASYNCTP_SANITIZE_FILTER replaces the tools' test selection (a gtest filter).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
bin=${ASYNCTP_DEVBIN:-.devbin/gpu}
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck)
source scripts/device/steps.sh

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null |
            head -n 1)
if [ -z "$sanitizer" ]; then
  echo "sanitize: no compute-sanitizer on this machine" | tee "$OUT/sanitize-unavailable.txt"
  exit 1
fi

# Both ops, every algorithm, kept small.
filter='AllCases/LoopbackCorrectness.MatchesFloat64OnEveryRank/*_W2_*'
filter+=':AllCases/LoopbackReduceScatter.MatchesFloat64OnEveryRank/*_W2_*'
filter+=':NativeGemmGating.*'
filter+=':Modes/LoopbackGraph.ReplaysWithFreshInputs/*thread_local'
filter+=':Modes/LoopbackReduceScatterGraph.ReplaysWithFreshInputs/arrival_*'
filter+=':Cases/LoopbackGraphReplay.*'

# initcheck tracks the initialization of every device byte and runs about
# three times slower than racecheck: the whole selection does not fit one
# device call (on the H200 it had reached a third of it after 200 s). It
# gets one case per op and algorithm instead (W = 2, pcie, row-major B:
# every code path of the call, the native kernel's gate, the library tail,
# the reduce-scatter's reduction), and the native kernel's gating; then its
# control (InitcheckControl, below).
small='AllCases/LoopbackCorrectness.MatchesFloat64OnEveryRank/*_W2_brow_pcie_*'
small+=':AllCases/LoopbackReduceScatter.MatchesFloat64OnEveryRank/*_W2_pcie_bf16_brow'
small+=':NativeGemmGating.*'

# One short run first: does the tool run on this device at all?
run_step probe 120 "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/asynctp_gpu_tests" \
  --gtest_brief=1 --gtest_filter='NativeGemmGating.ShuffledReleases'
if grep -q -e 'Device not supported' -e 'Unable to find injection' "$OUT/probe.log"; then
  echo "sanitize: compute-sanitizer cannot run on this machine's runtime; nothing checked" |
    tee "$OUT/sanitize-unavailable.txt"
  print_summary " (compute-sanitizer unavailable)"
  exit 1
fi

# The control (tests/gpu/initcheck_control_test.cpp): the same copy after a
# memset or a kernel's stores, ordered by a stream-memory-operation flag
# wait, then by an event wait; and a copy of rows a still-running kernel has
# stored, enqueued after the stores or (as the reduce-scatter enqueues its
# shipping) before them behind a flag wait; and the reduce-scatter kernel's
# own hand-off (its flag release, a flag wait, the copy of its chunk or of a
# slot written before the fork). Its reports are counted, not failed on
# (what each variant's reports would mean: the test's comment).
initcheck_control() {
  for control in CopyAfterAFlagWait CopyAfterAnEventWait KernelWrittenCopyAfterAFlagWait \
    KernelWrittenCopyAfterAnEventWait CopyWhileTheWriterRuns \
    CopyWhileTheWriterRunsEnqueuedBeforeTheWrite CopyOfAChunkTheKernelReleased \
    SelfShippedSlotBehindTheKernelsRelease CopyOfRowsOnlyTmaStoresWrote; do
    run_step "initcheck-$control" 60 "$sanitizer" --tool initcheck --print-limit 5 \
      "$bin/asynctp_gpu_tests" --gtest_brief=1 --gtest_filter="InitcheckControl.$control"
    echo "initcheck control $control: $(grep -E 'ERROR SUMMARY' "$OUT/initcheck-$control.log" |
      head -n 1)"
  done
}

for tool in "${tools[@]}"; do
  case $tool in
    memcheck) extra=(--leak-check full) ;;
    racecheck) extra=(--racecheck-report analysis) ;;
    synccheck | initcheck) extra=() ;;
    initcheck-control) initcheck_control; continue ;;
    initcheck-rs)
      # The reduce-scatter's case alone, its first reports in full (which
      # bytes, which allocation), for the controls to be read against.
      run_step initcheck-rs 120 "$sanitizer" --tool initcheck --print-limit 4 \
        "$bin/asynctp_gpu_tests" --gtest_brief=1 \
        --gtest_filter='AllCases/LoopbackReduceScatter.MatchesFloat64OnEveryRank/*_W2_pcie_bf16_brow'
      grep -E 'ERROR SUMMARY' "$OUT/initcheck-rs.log" | tail -n 1
      continue ;;
    *) echo "unknown tool $tool (memcheck, racecheck, synccheck, initcheck, initcheck-control," \
         "initcheck-rs)"
       exit 2 ;;
  esac
  # The replay test's thousand replays are for the plain run: under a tool,
  # ASYNCTP_TEST_GRAPH_REPLAYS cuts them (it keeps its first/last checks).
  selection=$filter
  [ "$tool" = initcheck ] && selection=$small
  selection=${ASYNCTP_SANITIZE_FILTER:-$selection}
  run_step "$tool" 280 env ASYNCTP_TEST_GRAPH_REPLAYS=20 "$sanitizer" --tool "$tool" \
    --error-exitcode 1 --print-limit 200 --target-processes all "${extra[@]}" \
    "$bin/asynctp_gpu_tests" --gtest_brief=1 --gtest_filter="$selection"
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$OUT/$tool.log" | tail -n 3
  if [ "$tool" = initcheck ]; then initcheck_control; fi
done
print_summary " (compute-sanitizer: ${tools[*]})"
