"""Builds the planner's cost table (src/core/cost_table.hpp) from what
scripts/device/calibrate.sh measured in OUT:
  gemm.json, gemm.log       native_kernel_bench --speed: every GEMM sample
  fixed-{ag,rs}-w{2,8}.json asynctp bench over a free link (arrival, 10^6 GB/s)
  pcie-{big,small}.json     asynctp bench over pcie, W = 8, K = 8192 and 2048

Fixed costs. bench times each algorithm and T_gemm, one cuBLAS GEMM of the
whole problem, in the same rounds. An algorithm's GEMM work at those clocks
is T_gemm times the sweep's ratio of that work to the whole cuBLAS GEMM
(native: its kernel's config, named in bench's reason; pipelined: W
cuBLAS GEMMs of M / W rows; decomposed: 1), so that ratios cancel the
clocks the sweep ran at. fixed(W) = time - scaled GEMM (- the reduction,
for the reduce-scatter) at W = 2 and 8 gives per call + per chunk x W.
A negative figure (noise larger than the cost) is written as 0 and
reported.

    python3 cost_table_from_runs.py OUT "DEVICE LINE"   writes OUT/cost-table.txt
"""

import json
import os
import re
import sys

# Not re-measured by calibrate.sh: asynctp_reduction_cost,
# bench/results/2026-12-04-rs-native-h200.md.
REDUCE_GBPS = 2844
M, N = 8192, 8192  # calibrate.sh's fixed-cost and pcie problem
K_FIXED = {"ag": 8192, "rs": 2048}
OPS = {"ag": "all-gather-matmul", "rs": "matmul-reduce-scatter"}
ALGORITHMS = ("native", "pipelined", "decomposed")


def load_gemms(out):
    gemm = {}
    for r in json.load(open(os.path.join(out, "gemm.json")))["speed"]:
        name = "cublas" if r["variant"] == "cublasLt" else r["variant"]
        gemm[(name, r["b"], r["m"], r["n"], r["k"])] = r["ms"]
    return gemm


def bench(out, file):
    """(T_gemm, {algorithm: (median ms, reason)}) of a one-link bench run."""
    link = json.load(open(os.path.join(out, file)))["links"][0]
    rows = {a["algorithm"]: (a["median_ms"], a.get("reason", ""))
            for a in link["algorithms"] if a.get("available")}
    return link["t_gemm_ms"], rows


def native_config(reason):
    """The kernel's config from the reason ("... (kernel NAME, ...)"); the
    reduce-scatter's rs_ kernels share the all-gather's mainloop, which is
    what the sweep measured."""
    match = re.search(r"kernel (\S+?),", reason)
    if not match:
        raise ValueError("no kernel named in the native reason: " + reason)
    name = match.group(1)
    return name[3:] if name.startswith("rs_") else name


def fixed_costs(out, gemm):
    """{op: {algorithm: (per call us, per chunk us)}}, and the notes."""
    result, notes = {}, []
    for op, k in K_FIXED.items():
        per_w = {}
        for w in (2, 8):
            t_gemm, rows = bench(out, "fixed-%s-w%d.json" % (op, w))
            whole = gemm[("cublas", "row", M, N, k)]
            work = {
                "decomposed": 1.0,
                "pipelined": w * gemm[("cublas", "row", M // w, N, k)] / whole,
                "native": gemm[(native_config(rows["native"][1]), "row", M, N, k)] / whole,
            }
            chunk_bytes = M // w * N * 2
            reduction = (w + 1) * chunk_bytes / (REDUCE_GBPS * 1e6) if op == "rs" else 0.0
            per_w[w] = {a: (rows[a][0] - t_gemm * work[a] - reduction) * 1000 for a in ALGORITHMS}
        result[op] = {}
        for a in ALGORITHMS:
            f2, f8 = per_w[2][a], per_w[8][a]
            per_chunk = (f8 - f2) / 6
            per_call = f2 - 2 * per_chunk
            if per_chunk < 0 or per_call < 0:
                notes.append("%s %s: W = 2 %.0f us, W = 8 %.0f us" % (OPS[op], a, f2, f8))
                per_chunk = max(0.0, per_chunk)
                per_call = max(0.0, min(f2, f8) - 2 * per_chunk)
            result[op][a] = (per_call, per_chunk)
    return result, notes


def pcie_link(out, fixed):
    """(GB/s, latency us) of the pcie gather from two sizes at W = 8."""
    per_call, per_chunk = fixed["ag"]["decomposed"]
    decomposed_fixed_ms = (per_call + 8 * per_chunk) / 1000
    points = []
    for file, k in (("pcie-big.json", 8192), ("pcie-small.json", 2048)):
        t_gemm, rows = bench(out, file)
        gather_ms = rows["decomposed"][0] - t_gemm - decomposed_fixed_ms
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
    fixed, notes = fixed_costs(out, gemm)
    gbps, latency_us = pcie_link(out, fixed)
    lines = [
        "asynctp-cost-table 1",
        "device " + name,
        "status calibrated",
        "source scripts/device/calibrate.sh (native_kernel_bench --speed; asynctp bench at "
        "10^6 GB/s, W = 2 and 8, and over pcie), " + device_line,
        "sms %d" % sms,
        "link pcie %.1f %.1f" % (gbps, latency_us),
        "link arrival - 0",
        "# reduce: not re-measured by calibrate.sh (asynctp_reduction_cost, "
        "bench/results/2026-12-04-rs-native-h200.md)",
        "reduce %d" % REDUCE_GBPS,
    ]
    lines += ["# fixed cost below zero, written as 0: " + n for n in notes]
    for op in ("ag", "rs"):
        for a in ALGORITHMS:
            lines.append("fixed %s %s %.0f %.1f" % (OPS[op], a, *fixed[op][a]))
    for (name_, b, m, n, k), v in sorted(gemm.items()):
        if not name_.startswith("auto:"):
            lines.append("gemm %s %s %d %d %d %.5f" % (name_, b, m, n, k, v))
    open(os.path.join(out, "cost-table.txt"), "w").write("\n".join(lines) + "\n")
    print("# %d gemm samples; pcie %.1f GB/s + %.1f us" % (
        sum(1 for line in lines if line.startswith("gemm")), gbps, latency_us))
    for op in ("ag", "rs"):
        print("# fixed us per call + per chunk, %s: %s" % (OPS[op], ", ".join(
            "%s %.0f + %.1f" % (a, *fixed[op][a]) for a in ALGORITHMS)))
    for n in notes:
        print("# below zero, written as 0: " + n)
    print("# wrote %s/cost-table.txt" % out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
