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
# The A/B runners' shapes: SHAPES='LINK GBPS M N K LAYOUT;...' into the
# array `shapes`; read_shape SHAPE sets link, gbps, m, n, k, layout and
# `rate` (--link-gbps GBPS on the arrival link, nothing over pcie).
read_shapes() {
  IFS=';' read -r -a shapes <<<"${SHAPES:?SHAPES: LINK GBPS M N K LAYOUT;...}"
}
read_shape() {
  read -r link gbps m n k layout <<<"$1"
  rate=()
  if [ "$link" = arrival ]; then rate=(--link-gbps "$gbps"); fi
}
