#!/usr/bin/env bash
# Runs on the device machine (one GPU, < 4 minutes on an H200): measures what
# the planner's cost table needs (src/core/cost_table.hpp) and writes it to
# $OUT/cost-table.txt in the format the library reads, then prints a summary.
#   1. GEMMs: .devbin/gpu/native_kernel_bench --speed over a grid of shapes
#      (M 256..32768, N 1280..28672, K 1024..8192, B row and col): cuBLASLt
#      (the table's "cublas") and every native config, flags preset, W = 8,
#      round-robin in one process.
#   2. Fixed costs: `asynctp run --algo all` over a link that costs nothing
#      (arrival, 10^6 GB/s), W = 8, both ops: the call's median minus its
#      GEMMs (from step 1 at the same shapes) and, for the reduce-scatter, the
#      reduction.
#   3. The pcie link: decomposed at two sizes over pcie: the gather's time
#      (median - GEMM - fixed) = latency + 7 chunks / bandwidth.
# Build first, here: scripts/build-device-bundle; carry .devbin. Then commit
# the file as data/cost/<device>.txt (the embedded table) or point
# ASYNCTP_COST_TABLE at it.
#
#   scripts/device/calibrate.sh          GRID_M / GRID_N / GRID_K override the grid
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh >/dev/null
bin=.devbin/gpu
grid_m=${GRID_M:-"256 512 1024 2048 8192 32768"}
grid_n=${GRID_N:-"1280 3584 8192 28672"}
grid_k=${GRID_K:-"1024 2048 8192"}
shapes=""
for m in $grid_m; do for n in $grid_n; do for k in $grid_k; do
  shapes+="${shapes:+,}${m}x${n}x${k}"
done; done; done
start=$(date +%s)
echo "# calibrate: $(head -n 1 "$OUT/device.txt"), $(date -u +%FT%TZ)"
# The library's configs use swizzles 1, 2 and 4 (src/cuda/native/async_input_gemm.cpp).
timeout 200 "$bin/native_kernel_bench" --speed --reps 20 --swizzles 1,2,4 --shapes "$shapes" \
  --json "$OUT/gemm.json" >"$OUT/gemm.log" 2>&1 || { echo "native_kernel_bench failed: $(tail -n 3 "$OUT/gemm.log")"; exit 1; }
echo "# gemms measured in $(( $(date +%s) - start )) s"

run_json() {  # file, then asynctp run arguments
  local file=$1; shift
  timeout 60 "$bin/asynctp" run --backend cuda --iters 10 --warmup 2 --json "$@" >"$OUT/$file" \
    2>"$OUT/$file.err" || echo "asynctp run $* failed: $(tail -n 1 "$OUT/$file.err")"
}
free="--world-size 8 --link arrival --link-gbps 1000000 --algo all"
run_json fixed-ag.json $free -m 8192 -n 8192 -k 8192
run_json fixed-rs.json $free --op matmul-reduce-scatter -m 8192 -n 8192 -k 2048
run_json pcie-big.json --world-size 8 --link pcie --algo decomposed -m 8192 -n 8192 -k 8192
run_json pcie-small.json --world-size 8 --link pcie --algo decomposed -m 8192 -n 8192 -k 2048

python3 - "$OUT" "$(head -n 1 "$OUT/device.txt")" <<'PY'
import json, os, re, sys
out, device_line = sys.argv[1], sys.argv[2]
REDUCE_GBPS = 2844  # not re-measured here: asynctp_reduction_cost, 2026-12-04-rs-native-h200.md
rows = json.load(open(os.path.join(out, "gemm.json")))["speed"]
gemm = {}
for r in rows:
    name = "cublas" if r["variant"] == "cublasLt" else r["variant"]
    gemm[(name, r["b"], r["m"], r["n"], r["k"])] = r["ms"]
def ms(name, m, n, k, b="row"):
    return gemm[(name, b, m, n, k)]
def auto(m, n, k, b="row"):
    for (name, lay, mm, nn, kk), v in gemm.items():
        if name.startswith("auto:") and (lay, mm, nn, kk) == (b, m, n, k):
            return v
    raise KeyError("no auto native row at %dx%dx%d" % (m, n, k))
def medians(file):
    r = json.load(open(os.path.join(out, file)))
    return {a["algorithm"]: a["median_ms"] for a in r["algorithms"] if a["available"]}
w = 8
ag = medians("fixed-ag.json")
fixed_ag = {"decomposed": ag["decomposed"] - ms("cublas", 8192, 8192, 8192),
            "pipelined": ag["pipelined"] - w * ms("cublas", 1024, 8192, 8192),
            "native": ag["native"] - auto(8192, 8192, 8192)}
rs = medians("fixed-rs.json")
reduction = (w + 1) * 1024 * 8192 * 2 / (REDUCE_GBPS * 1e6)
fixed_rs = {"decomposed": rs["decomposed"] - ms("cublas", 8192, 8192, 2048) - reduction,
            "pipelined": rs["pipelined"] - w * ms("cublas", 1024, 8192, 2048) - reduction,
            "native": rs["native"] - auto(8192, 8192, 2048) - reduction}
gather = []
for file, k in (("pcie-big.json", 8192), ("pcie-small.json", 2048)):
    t = medians(file)["decomposed"] - ms("cublas", 8192, 8192, k) - fixed_ag["decomposed"]
    gather.append(((w - 1) * 1024 * k * 2, t))
(b1, t1), (b2, t2) = gather
pcie_gbps = (b1 - b2) / ((t1 - t2) * 1e6)
pcie_latency_us = max(0.0, (t2 - b2 / (pcie_gbps * 1e6)) * 1000)
# The bench's header: "# native_kernel_bench: <name>, sm_90, 132 SMs, ..."
head = re.search(r"native_kernel_bench: (.*?), sm_\d+, (\d+) SMs", open(os.path.join(out, "gemm.log")).read())
name, sms = head.group(1), int(head.group(2))
us = lambda v: max(0.0, v * 1000)
lines = ["asynctp-cost-table 1",
         "device " + name,
         "status calibrated",
         "source scripts/device/calibrate.sh (native_kernel_bench --speed, asynctp run at 10^6 GB/s and over pcie), " + device_line,
         "sms %d" % sms,
         "link pcie %.1f %.1f" % (pcie_gbps, pcie_latency_us),
         "link arrival - 0",
         "# reduce: not re-measured by calibrate.sh (asynctp_reduction_cost, bench/results/2026-12-04-rs-native-h200.md)",
         "reduce %d" % REDUCE_GBPS]
for op, f in (("all-gather-matmul", fixed_ag), ("matmul-reduce-scatter", fixed_rs)):
    for a in ("native", "pipelined", "decomposed"):
        lines.append("fixed %s %s %.0f 0" % (op, a, us(f[a])))
for (name_, b, m, n, k), v in sorted(gemm.items()):
    if name_.startswith("auto:"):
        continue
    lines.append("gemm %s %s %d %d %d %.5f" % (name_, b, m, n, k, v))
open(os.path.join(out, "cost-table.txt"), "w").write("\n".join(lines) + "\n")
print("# %d gemm samples; pcie %.1f GB/s + %.1f us; fixed us (ag native/pipelined/decomposed) "
      "%.0f/%.0f/%.0f, (rs) %.0f/%.0f/%.0f" % (
      sum(1 for l in lines if l.startswith("gemm")), pcie_gbps, pcie_latency_us,
      *(us(fixed_ag[a]) for a in ("native", "pipelined", "decomposed")),
      *(us(fixed_rs[a]) for a in ("native", "pipelined", "decomposed"))))
print("# wrote %s/cost-table.txt" % out)
PY
echo "# calibrate took $(( $(date +%s) - start )) s"
