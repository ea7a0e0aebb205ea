# Sourced by the scripts/device/*.sh runners: each step in its own process
# bounded by `timeout`, its log in $OUT/NAME.log (last lines echoed), and a
# summary line per step.
summary=()
run_step() {  # run_step NAME LIMIT_S COMMAND...
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $*"
  local start=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$OUT/$name.log"
  summary+=("$(printf '%-16s exit %3d  %4ds' "$name" "$rc" $((SECONDS - start)))")
}
print_summary() {  # print_summary TITLE
  echo "=== summary$1"
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
}
