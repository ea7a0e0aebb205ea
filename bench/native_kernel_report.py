"""Merges one device call's results into markdown tables:
  1. the C++ bench (native_kernel_bench): the auto-chosen and the best native
     config per shape against cuBLASLt, interleaved in one process;
  2. the PyTorch comparison (native_kernel_torch.py): the native auto choice
     against torch.mm and torch.ops.symm_mem._async_input_mm, interleaved in
     one process.

    python3 bench/native_kernel_report.py native.json [torch.json]
"""
import json
import statistics
import sys


def groups(rows):
    out = {}
    for r in rows:
        out.setdefault((r["m"], r["n"], r["k"], r.get("b", "row")), []).append(r)
    return out


def stats(values):
    return f"median {statistics.median(values):.3f}, min {min(values):.3f} ({len(values)} shapes)"


def main():
    native = json.load(open(sys.argv[1]))
    torch_rows = []
    if len(sys.argv) > 2:
        try:
            torch_rows = json.load(open(sys.argv[2]))["rows"]
        except (OSError, ValueError, KeyError) as e:
            print(f"# no torch results: {e!r}")

    g = groups(native["speed"])
    for lay in ("row", "col"):
        keys = [key for key in g if key[3] == lay]
        if not keys:
            continue
        print(f"\n### native vs cuBLASLt (C++ bench, one process), B {lay}-major\n")
        print("| M x N x K | cuBLASLt TFLOP/s | auto config | TFLOP/s | ratio | best config | TFLOP/s | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        auto_r, best_r = [], []
        for key in keys:
            rows = g[key]
            lt = next(r for r in rows if r["variant"] == "cublasLt")
            nat = [r for r in rows if r["variant"] != "cublasLt" and not r["variant"].startswith("auto:")]
            au = next((r for r in rows if r["variant"].startswith("auto:")), None)
            best = max(nat, key=lambda r: r["ratio"]) if nat else None
            if au:
                auto_r.append(au["ratio"])
            if best:
                best_r.append(best["ratio"])
            print(f"| {key[0]}x{key[1]}x{key[2]} | {lt['tflops']:.1f} | "
                  + (f"{au['variant'][5:]} | {au['tflops']:.1f} | {au['ratio']:.3f} | " if au else "- | - | - | ")
                  + (f"{best['variant']} | {best['tflops']:.1f} | {best['ratio']:.3f} |" if best else "- | - | - |"))
        if auto_r:
            print(f"\nauto choice / cuBLASLt: {stats(auto_r)}; best config / cuBLASLt: {stats(best_r)}")

    if torch_rows:
        t = groups(torch_rows)
        for lay in ("row", "col"):
            keys = [key for key in t if key[3] == lay]
            if not keys:
                continue
            print(f"\n### native vs PyTorch (one process, interleaved), B {lay}-major\n")
            print("| M x N x K | torch.mm | _async_input_mm | native auto (config) | "
                  "native coop_128x256x64_c2x1_s1 | auto / torch.mm | auto / _async_input_mm |")
            print("|---|---|---|---|---|---|---|")
            vs_mm, vs_am = [], []
            for key in keys:
                rows = {r["variant"]: r for r in t[key]}
                mm = rows.get("torch.mm")
                am = rows.get("_async_input_mm")
                au = next((r for name, r in rows.items() if name.startswith("native:auto=")), None)
                same = rows.get("native:coop_128x256x64_c2x1_s1")
                if au and au["variant"].endswith("coop_128x256x64_c2x1_s1"):
                    same = au
                r_mm = au["tflops"] / mm["tflops"] if au and mm else None
                r_am = au["tflops"] / am["tflops"] if au and am else None
                if r_mm:
                    vs_mm.append(r_mm)
                if r_am:
                    vs_am.append(r_am)
                cell = lambda r: f"{r['tflops']:.1f}" if r else "-"  # noqa: E731
                name = au["variant"][len("native:auto="):] if au else "-"
                cells = [f"{key[0]}x{key[1]}x{key[2]}", cell(mm), cell(am), f"{cell(au)} ({name})",
                         cell(same), f"{r_mm:.3f}" if r_mm else "-", f"{r_am:.3f}" if r_am else "-"]
                print("| " + " | ".join(cells) + " |")
            if vs_mm:
                print(f"\nnative auto / torch.mm: {stats(vs_mm)}")
            if vs_am:
                print(f"native auto / _async_input_mm: {stats(vs_am)}")
            bad = [r for r in (x for rs in t.values() for x in rs) if r["rel"] > 1e-2 or r["rel"] != r["rel"]]
            if bad:
                print(f"WRONG results in the PyTorch comparison: {len(bad)}")
    print(f"\nnative bench failures: {native.get('failures')}")


if __name__ == "__main__":
    main()
