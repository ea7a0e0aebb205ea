"""scripts/device/cost_table_from_runs.py, which calibrate.sh runs on the
device, on runs made up here with known fixed costs: it must recover them
(per call and per chunk, from W = 2 and 8) under clocks that differ from the
sweep's, and the pcie link's bandwidth and latency."""

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
# True fixed costs in us: (per call, per chunk).
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

    for w in (2, 8):
        bench_file("fixed-ag-w%d.json" % w, "ag", w, 8192)
        bench_file("fixed-rs-w%d.json" % w, "rs", w, 2048)
    for name, k in (("pcie-big.json", 8192), ("pcie-small.json", 2048)):
        gather_bytes = 7 * (M // 8) * k * 2
        bench_file(name, "ag", 8, k, PCIE_LATENCY_US / 1000 + gather_bytes / (PCIE_GBPS * 1e6))


def test_recovers_fixed_costs_and_the_pcie_link(tmp_path):
    write_runs(str(tmp_path))
    builder.main(str(tmp_path), "GPU 0: test")
    lines = open(tmp_path / "cost-table.txt").read().splitlines()
    assert "status calibrated" in lines
    fixed = {}
    for line in lines:
        words = line.split()
        if words[:1] == ["fixed"]:
            fixed[(words[1], words[2])] = (float(words[3]), float(words[4]))
        if words[:2] == ["link", "pcie"]:
            assert abs(float(words[2]) - PCIE_GBPS) < 0.1, line
            assert abs(float(words[3]) - PCIE_LATENCY_US) < 1.0, line
    for (op, a), (per_call, per_chunk) in TRUE.items():
        got = fixed[(builder.OPS[op], a)]
        assert abs(got[0] - per_call) < 1.0 and abs(got[1] - per_chunk) < 0.1, (op, a, got)
    assert not any(line.startswith("# fixed cost below zero") for line in lines)
    assert sum(line.startswith("gemm ") for line in lines) == 12
