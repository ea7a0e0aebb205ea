"""The native kernel against torch.mm and PyTorch's own async-input GEMM
(torch.ops.symm_mem._async_input_mm: CUTLASS 128x256x64 cooperative, cluster
2x1) on the harness's headline shapes, in ONE process: the variants are
timed round-robin, so they share clocks and power state (a GPU that has been
busy for seconds runs slower than one that just woke up, and separate
processes would compare different states).

The native kernel comes through .devbin/gpu/libasynctp_native.so (C ABI,
bench/native_kernel_capi.cpp). Every chunk ready (signals = 1 = epoch), W = 8,
pivot rotating; B row-major and column-major; CUDA events, median of >= 20
reps after 3 warm-ups, rotating among input sets larger than L2.

    python3 bench/native_kernel_torch.py [--lib .devbin/gpu/libasynctp_native.so]
                                         [--json FILE] [--reps N] [--quick]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys

import torch

W = 8


def shapes(quick):
    out = [(8192, 8192, 8192)]
    for m in (4096, 8192, 16384, 32768):
        for n, k in ((1280, 8192), (7168, 8192), (8192, 3584), (8192, 28672)):
            out.append((m, n, k))
    return out[:3] if quick else out


class Native:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.nk_choose.restype = ctypes.c_char_p
        lib.nk_choose.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_int]
        lib.nk_launch.restype = ctypes.c_int
        lib.nk_launch.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                  ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                  ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int,
                                  ctypes.c_void_p]
        lib.nk_config_count.restype = ctypes.c_int
        lib.nk_config_name.restype = ctypes.c_char_p
        lib.nk_config_name.argtypes = [ctypes.c_int]
        self.lib = lib
        self.configs = [lib.nk_config_name(i).decode() for i in range(lib.nk_config_count())]

    def choose(self, m, n, k, bcol):
        r = self.lib.nk_choose(m // W, n, k, W, int(bcol), 0)
        return r.decode() if r else None

    def launch(self, name, a, b_ptr, bcol, c, m, n, k, pivot, flags, err):
        rc = self.lib.nk_launch(name.encode(), 0, a.data_ptr(), b_ptr, int(bcol), c.data_ptr(),
                                m // W, n, k, W, pivot, flags.data_ptr(), 1, 2_000_000_000,
                                err.data_ptr(), 0, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"nk_launch({name}) returned cudaError {rc}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".devbin/gpu/libasynctp_native.so")
    ap.add_argument("--json", default="")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = max(20, args.reps)

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    print(f"# torch {torch.__version__}, {props.name}, {props.multi_processor_count} SMs", flush=True)
    op = None
    try:
        op = torch.ops.symm_mem._async_input_mm
        print(f"# schema: {op.default._schema}", flush=True)
    except Exception as e:  # noqa: BLE001 - report and go on without it
        print(f"# torch.ops.symm_mem._async_input_mm unavailable: {e!r}", flush=True)
    native = None
    if os.path.exists(args.lib):
        native = Native(os.path.abspath(args.lib))
        print(f"# native configs: {' '.join(native.configs)}", flush=True)
    else:
        print(f"# no native library at {args.lib}", flush=True)

    l2 = getattr(props, "L2_cache_size", 60 << 20)
    sig = torch.ones(W, dtype=torch.uint32, device=dev)  # ready: 1 (= the native epoch)
    err = torch.zeros(4, dtype=torch.int32, device=dev)
    rows = []
    for m, n, k in shapes(args.quick):
        set_bytes = 2 * (m * k + 2 * k * n + m * n)
        nsets = min(8, max(2, (3 * l2) // set_bytes + 1))
        gen = torch.Generator(device=dev)
        gen.manual_seed(1234 + m + n + k)
        rnd = lambda r, c: torch.rand(r, c, device=dev, generator=gen).mul_(2).sub_(1).to(torch.bfloat16)  # noqa: E731
        a = [rnd(m, k) for _ in range(nsets)]
        b_row = [rnd(k, n) for _ in range(nsets)]       # k x n, row-major
        b_colT = [rnd(n, k) for _ in range(nsets)]      # its .t() is k x n, column-major
        c = [torch.empty(m, n, dtype=torch.bfloat16, device=dev) for _ in range(nsets)]

        variants = []  # (layout, name, fn(i, rep))
        for bcol in (False, True):
            bmat = (lambda i: b_colT[i].t()) if bcol else (lambda i: b_row[i])
            lay = "col" if bcol else "row"
            variants.append((lay, "torch.mm", lambda i, r, bmat=bmat: torch.mm(a[i], bmat(i))))
            if op is not None:
                variants.append((lay, "_async_input_mm",
                                 lambda i, r, bmat=bmat: op(a[i], bmat(i), sig, r % W)))
            if native is not None:
                names = []
                chosen = native.choose(m, n, k, bcol)
                if chosen:
                    names.append(("native:auto=" + chosen, chosen))
                same_as_torch = "coop_128x256x64_c2x1_s1"
                if same_as_torch in native.configs and chosen != same_as_torch:
                    names.append(("native:" + same_as_torch, same_as_torch))
                for label, cfg in names:
                    variants.append((lay, label, lambda i, r, cfg=cfg, bcol=bcol, bmat=bmat:
                                     native.launch(cfg, a[i], bmat(i).data_ptr(), bcol, c[i],
                                                   m, n, k, r % W, sig, err)))
        times = {(lay, name): [] for lay, name, _ in variants}
        ev = {key: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for key in times}
        broken = set()
        for rep in range(3 + reps):
            i = rep % nsets
            for lay, name, fn in variants:
                if (lay, name) in broken:
                    continue
                e0, e1 = ev[(lay, name)]
                e0.record()
                try:
                    fn(i, rep)
                except Exception as e:  # noqa: BLE001
                    print(f"# {name} ({lay}) failed at {m}x{n}x{k}: {e!r}", flush=True)
                    broken.add((lay, name))
                    continue
                e1.record()
            torch.cuda.synchronize()
            if rep >= 3:
                for key in times:
                    if key not in broken:
                        times[key].append(ev[key][0].elapsed_time(ev[key][1]))
        # correctness of every variant on set 0 against torch.mm
        rel = {}
        for bcol in (False, True):
            lay = "col" if bcol else "row"
            bm = b_colT[0].t() if bcol else b_row[0]
            ref = torch.mm(a[0], bm).float()
            for vl, name, fn in variants:
                if vl != lay or name == "torch.mm" or (vl, name) in broken:
                    continue
                c[0].fill_(float("nan"))
                out = fn(0, 3)
                got = (c[0] if name.startswith("native") else out).float()
                torch.cuda.synchronize()
                rel[(lay, name)] = (torch.linalg.norm(got - ref) / torch.linalg.norm(ref)).item()
        if int(err.abs().sum().item()) != 0:
            print(f"# FAIL native error words set: {err.tolist()}", flush=True)
        flop = 2.0 * m * n * k
        for lay in ("row", "col"):
            line = f"{m}x{n}x{k} B {lay}:"
            for vl, name, _ in variants:
                if vl != lay or not times[(vl, name)]:
                    continue
                ms = statistics.median(times[(vl, name)])
                tf = flop / (ms * 1e-3) / 1e12
                r = rel.get((vl, name), 0.0)
                rows.append({"m": m, "n": n, "k": k, "b": lay, "variant": name, "ms": ms,
                             "tflops": tf, "rel": r})
                line += f"  {name} {tf:.1f}"
                if r > 1e-2 or r != r:
                    line += f" (WRONG rel {r:.2e})"
            print(line, flush=True)
        del a, b_row, b_colT, c
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
