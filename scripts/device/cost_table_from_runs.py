"""Builds the planner's cost table (src/core/cost_table.hpp), before its fit
to the host's calls, from what scripts/device/calibrate.sh measured in OUT:
  gemm.json, gemm.log       native_kernel_bench --speed: every GEMM sample
  call-costs.txt            call-costs.sh: tiny calls over a free link
  pcie-{big,small}.json     asynctp bench over pcie, W = 8, K = 8192 and 2048

The fixed lines are written as zero: scripts/fit_call_costs.py fits them
(and the GEMMs' burst-to-sweep scale) to call-costs.txt afterwards. The
pcie link: the gather's time at two sizes (T_decomposed - T_gemm, bench's
cuBLAS GEMM in the same rounds, less decomposed's tiny call at W = 8) =
latency + 7 chunks / bandwidth.

    python3 cost_table_from_runs.py OUT "DEVICE LINE"   writes OUT/cost-table-sweep.txt
"""

import json
import os
import re
import sys

# Not re-measured by calibrate.sh: asynctp_reduction_cost,
# bench/results/2026-12-04-rs-native-h200.md.
REDUCE_GBPS = 2844
M, N = 8192, 8192  # calibrate.sh's pcie problem
OPS = {"ag": "all-gather-matmul", "rs": "matmul-reduce-scatter"}
ALGORITHMS = ("native", "pipelined", "decomposed")


def load_gemms(out):
    gemm = {}
    for r in json.load(open(os.path.join(out, "gemm.json")))["speed"]:
        name = "cublas" if r["variant"] == "cublasLt" else r["variant"]
        gemm[(name, r["b"], r["m"], r["n"], r["k"])] = r["ms"]
    return gemm


def bench(out, file):
    """(T_gemm, {algorithm: median ms}) of a one-link bench run."""
    link = json.load(open(os.path.join(out, file)))["links"][0]
    rows = {a["algorithm"]: a["median_ms"] for a in link["algorithms"] if a.get("available")}
    return link["t_gemm_ms"], rows


def decomposed_fixed_ms(out):
    """The decomposed all-gather's whole tiny call at W = 8 over a free link
    (call-costs.sh): its fixed cost, as the pcie gather's estimate needs it."""
    for line in open(os.path.join(out, "call-costs.txt")):
        w = line.split()
        if w[0] == OPS["ag"] and w[1] == "8" and int(w[4]) == 8 * 256 and w[11] != "-":
            return float(w[11])
    raise ValueError("call-costs.txt has no tiny all-gather call at W = 8")


def pcie_link(out):
    """(GB/s, latency us) of the pcie gather from two sizes at W = 8."""
    fixed_ms = decomposed_fixed_ms(out)
    points = []
    for file, k in (("pcie-big.json", 8192), ("pcie-small.json", 2048)):
        t_gemm, rows = bench(out, file)
        gather_ms = rows["decomposed"] - t_gemm - fixed_ms
        points.append((7 * (M // 8) * k * 2, gather_ms))
    (b1, t1), (b2, t2) = points
    gbps = (b1 - b2) / ((t1 - t2) * 1e6)
    latency_us = max(0.0, (t2 - b2 / (gbps * 1e6)) * 1000)
    return gbps, latency_us


def main(out, device_line):
    gemm = load_gemms(out)
    head = re.search(r"native_kernel_bench: (.*?), sm_\d+, (\d+) SMs",
                     open(os.path.join(out, "gemm.log")).read())
    name, sms = head.group(1), int(head.group(2))
    gbps, latency_us = pcie_link(out)
    lines = [
        "asynctp-cost-table 1",
        "device " + name,
        "status calibrated",
        "source scripts/device/calibrate.sh (native_kernel_bench --speed; call-costs.sh and "
        "fit_call_costs.py; asynctp bench over pcie), " + device_line,
        "sms %d" % sms,
        "link pcie %.1f %.1f" % (gbps, latency_us),
        "link arrival - 0",
        "# reduce: not re-measured by calibrate.sh (asynctp_reduction_cost, "
        "bench/results/2026-12-04-rs-native-h200.md)",
        "reduce %d" % REDUCE_GBPS,
        "# fixed: zero here, fitted to call-costs.txt by scripts/fit_call_costs.py",
    ]
    for op in ("ag", "rs"):
        for a in ALGORITHMS:
            lines.append("fixed %s %s 0 0" % (OPS[op], a))
    for (name_, b, m, n, k), v in sorted(gemm.items()):
        if not name_.startswith("auto:"):
            lines.append("gemm %s %s %d %d %d %.5f" % (name_, b, m, n, k, v))
    path = os.path.join(out, "cost-table-sweep.txt")
    open(path, "w").write("\n".join(lines) + "\n")
    print("# %d gemm samples; pcie %.1f GB/s + %.1f us" % (
        sum(1 for line in lines if line.startswith("gemm")), gbps, latency_us))
    print("# wrote " + path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
