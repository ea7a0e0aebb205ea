"""scripts/device/cost_table_from_runs.py, which calibrate.sh runs on the
device, on runs made up here: it must write every GEMM sample, fixed lines
of zero (scripts/fit_call_costs.py fits them afterwards; the CTest
PlannerReplay.FitCallCostsRecoversScaleAndFixedCosts checks that), and
recover the pcie link's bandwidth and latency from two bench runs whose
calls run at other clocks than the sweep's, less decomposed's tiny call of
call-costs.sh."""

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "device", "cost_table_from_runs.py")

spec = importlib.util.spec_from_file_location("cost_table_from_runs", SCRIPT)
builder = importlib.util.module_from_spec(spec)
spec.loader.exec_module(builder)

M, N = 8192, 8192
CLOCK = 0.9  # the bench's calls run 10 % faster than the sustained sweep
# True fixed costs in us: (per call, per chunk); the pcie runs pay decomposed's.
TRUE = {
    ("ag", "native"): (40.0, 2.0), ("ag", "pipelined"): (10.0, 6.0),
    ("ag", "decomposed"): (25.0, 0.5), ("rs", "native"): (30.0, 1.0),
    ("rs", "pipelined"): (12.0, 5.0), ("rs", "decomposed"): (20.0, 1.5),
}
PCIE_GBPS, PCIE_LATENCY_US = 50.0, 200.0


def sweep_ms(m, k):
    """A made-up sustained cuBLAS time, roughly proportional to the work."""
    return 0.02 + m * N * k * 2 / 700e12 * 1e3


def write_runs(out):
    speed = []
    for m in (1024, 4096, 8192):
        for k in (2048, 8192):
            speed.append({"variant": "cublasLt", "b": "row", "m": m, "n": N, "k": k,
                          "ms": sweep_ms(m, k)})
            speed.append({"variant": "coop_128x256x64_c2x1_s1", "b": "row", "m": m, "n": N,
                          "k": k, "ms": 0.95 * sweep_ms(m, k)})
    with open(os.path.join(out, "gemm.json"), "w") as f:
        json.dump({"speed": speed}, f)
    with open(os.path.join(out, "gemm.log"), "w") as f:
        f.write("# native_kernel_bench: NVIDIA H200, sm_90, 132 SMs, L2 60 MB\n")

    def bench_file(name, op, w, k, link_ms=0.0):
        t_gemm = CLOCK * sweep_ms(M, k)
        work = {"native": CLOCK * 0.95 * sweep_ms(M, k),
                "pipelined": CLOCK * w * sweep_ms(M // w, k), "decomposed": t_gemm}
        reduction = (w + 1) * (M // w) * N * 2 / (builder.REDUCE_GBPS * 1e6) if op == "rs" else 0
        rows = []
        for a in builder.ALGORITHMS:
            per_call, per_chunk = TRUE[(op, a)]
            ms = work[a] + reduction + (per_call + per_chunk * w) / 1000 + link_ms
            kernel = ("rs_" if op == "rs" else "") + "coop_128x256x64_c2x1_s1"
            rows.append({"algorithm": a, "available": True, "median_ms": ms,
                         "reason": "forced (kernel %s, 1 signal per chunk)" % kernel})
        with open(os.path.join(out, name), "w") as f:
            json.dump({"links": [{"t_gemm_ms": t_gemm, "algorithms": rows}]}, f)

    for name, k in (("pcie-big.json", 8192), ("pcie-small.json", 2048)):
        gather_bytes = 7 * (M // 8) * k * 2
        bench_file(name, "ag", 8, k, PCIE_LATENCY_US / 1000 + gather_bytes / (PCIE_GBPS * 1e6))
    # call-costs.sh's lines: the tiny all-gather at W = 8 costs its fixed cost.
    per_call, per_chunk = TRUE[("ag", "decomposed")]
    with open(os.path.join(out, "call-costs.txt"), "w") as f:
        f.write("all-gather-matmul 2 arrival 1e+06 512 256 256 row - 0.03 0.04 0.05\n")
        f.write("all-gather-matmul 8 arrival 1e+06 2048 256 256 row - 0.03 0.12 %.6f\n" %
                ((per_call + per_chunk * 8) / 1000))


def test_writes_the_sweep_and_recovers_the_pcie_link(tmp_path):
    write_runs(str(tmp_path))
    builder.main(str(tmp_path), "GPU 0: test")
    lines = open(tmp_path / "cost-table-sweep.txt").read().splitlines()
    assert "status calibrated" in lines
    fixed = {}
    pcie = None
    for line in lines:
        words = line.split()
        if words[:1] == ["fixed"]:
            fixed[(words[1], words[2])] = (float(words[3]), float(words[4]))
        if words[:2] == ["link", "pcie"]:
            pcie = (float(words[2]), float(words[3]))
    assert pcie is not None
    assert abs(pcie[0] - PCIE_GBPS) < 0.1, pcie
    assert abs(pcie[1] - PCIE_LATENCY_US) < 1.0, pcie
    assert fixed == {(builder.OPS[op], a): (0.0, 0.0) for op, a in TRUE}
    assert sum(line.startswith("gemm ") for line in lines) == 12
