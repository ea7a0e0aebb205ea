#!/usr/bin/env bash
# Runs several scripts/device runners in one device call (a machine's start
# costs minutes of the session's device time, so one call should do all the
# work that belongs together) and packs their logs into $OUT/logs.tgz: the
# device tool returns at most 8 files, and the runners write one log per step.
# Each runner gets its own log folder and a wall-clock bound; the summary of
# every runner is printed last, and the exit status is 1 when any failed.
#
#   scripts/device/batch.sh 'LIMIT_S RUNNER ARGS...' ...
#   e.g. scripts/device/batch.sh '300 cuda-backend.sh gpu-tests' \
#          '200 env ASYNCTP_STRESS_CALLS=1000 bash scripts/device/stress.sh'
# A RUNNER ending in .sh is taken from scripts/device/; anything else runs as
# written.
set -uo pipefail
cd "$(dirname "$0")/../.."
final_out=${OUT:-/tmp/asynctp-device-out}
scratch=$(mktemp -d)
results=()
failed=0
index=0
for spec in "$@"; do
  index=$((index + 1))
  read -r limit runner args <<<"$spec"
  name=$(printf '%02d-%s' "$index" "$(basename "${runner%.sh}")")
  mkdir -p "$scratch/$name"
  case $runner in
    *.sh) command="bash scripts/device/$runner ${args:-}" ;;
    *) command="$runner ${args:-}" ;;
  esac
  start=$SECONDS
  OUT=$scratch/$name timeout "$limit" bash -c "$command" >"$scratch/$name/stdout.txt" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || failed=1
  results+=("$(printf '%-22s exit %3d  %4ds  %s' "$name" "$rc" $((SECONDS - start)) "$spec")")
  # The runner's own summary (per step), if it wrote one.
  [ -f "$scratch/$name/summary.txt" ] && sed 's/^/    /' "$scratch/$name/summary.txt" >>"$scratch/summaries.txt"
  echo "== $name (exit $rc)"; tail -n 25 "$scratch/$name/stdout.txt"
  # Packed after every runner: a device call cut off by its own bound still
  # brings back the logs of the runners that finished.
  tar czf "$final_out/logs.tgz" -C "$scratch" .
done
echo "=== batch summary (logs in logs.tgz)"
printf '%s\n' "${results[@]}"
[ -f "$scratch/summaries.txt" ] && cat "$scratch/summaries.txt"
exit "$failed"
