"""PyTorch's own AsyncTP beside the NCCL baseline, for side-by-side numbers with
`asynctp bench --link nccl`: per shape, in one run,
  allgather    torch.distributed.all_gather_into_tensor (NCCL) alone: T_comm
  gemm         torch.mm of the gathered A with this rank's B alone: T_gemm
  decomposed   the two in sequence (the baseline)
  torch_fused  torch.ops.symm_mem.fused_all_gather_matmul (symmetric memory,
               copy-engine pipeline)
  torch_native the same op with TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP set: the
               _async_input_mm kernel where PyTorch takes it (it checks the
               shape itself; elsewhere it runs the default path, and the row
               says so)
CUDA events, median over --iters after --warmup; fresh random inputs (never
zeros); every fused result compared with decomposed's (relative Frobenius
error). NVLink multicast is kept off (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1), as the machines require.

    torchrun --nproc-per-node W bench/torch_fused_ag_mm.py [--shapes MxNxK,...]
        [--iters N] [--warmup N] [--b-layout row|col] [--json FILE]
    python3 bench/torch_fused_ag_mm.py ...    (a world of one, no torchrun)

M is the global row count (each rank holds M / W rows), N is this rank's B
width, K the inner dimension. Rank 0 prints.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402  (after the environment above)
import torch.distributed as dist  # noqa: E402

NATIVE_VARIABLE = "TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP"


def default_shapes():
    out = [(m, n, 8192) for m in (2048, 4096, 8192, 16384, 32768) for n in (1280, 3584, 7168)]
    return out + [(8192, 8192, 8192)]


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        m, n, k = (int(v) for v in item.lower().split("x"))
        shapes.append((m, n, k))
    return shapes


def init_world():
    if "RANK" not in os.environ:  # a world of one without torchrun
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    return dist.get_rank(), dist.get_world_size()


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    # The slowest rank's median is the collective's time.
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def rel_error(x, ref):
    x, ref = x.double(), ref.double()
    return ((x - ref).norm() / ref.norm()).item()


def symmetric_memory():
    try:
        from torch.distributed import _symmetric_memory as symm_mem
        symm_mem.enable_symm_mem_for_group(dist.group.WORLD.group_name)
        torch.ops.symm_mem.fused_all_gather_matmul  # noqa: B018 (present?)
        return symm_mem, ""
    except Exception as e:  # an older torch, or no symmetric memory here
        return None, f"{type(e).__name__}: {e}"


def run_shape(m_global, n, k, args, rank, world, symm_mem, symm_why):
    m = m_global // world
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    a = (torch.randn(m, k, device="cuda", generator=gen) / k ** 0.5).bfloat16()
    if args.b_layout == "col":
        b = torch.randn(n, k, device="cuda", generator=gen).bfloat16().t()
    else:
        b = torch.randn(k, n, device="cuda", generator=gen).bfloat16()
    gathered = torch.empty(m_global, k, dtype=torch.bfloat16, device="cuda")
    group = dist.group.WORLD.group_name

    def allgather():
        dist.all_gather_into_tensor(gathered, a)

    def gemm():
        return torch.mm(gathered, b)

    def decomposed():
        dist.all_gather_into_tensor(gathered, a)
        return torch.mm(gathered, b)

    row = {"M": m_global, "N": n, "K": k, "world_size": world}
    row["allgather_ms"] = timed(allgather, args.iters, args.warmup)
    row["gemm_ms"] = timed(gemm, args.iters, args.warmup)
    row["decomposed_ms"] = timed(decomposed, args.iters, args.warmup)
    reference = decomposed()

    for name, native in (("torch_fused", False), ("torch_native", True)):
        if symm_mem is None:
            row[name] = {"available": False, "why": symm_why}
            continue
        if native:
            os.environ[NATIVE_VARIABLE] = "1"
        else:
            os.environ.pop(NATIVE_VARIABLE, None)
        try:
            def fused():
                return torch.ops.symm_mem.fused_all_gather_matmul(a, [b], 0, group)

            _, outs = fused()
            err = rel_error(outs[0], reference)
            ms = timed(fused, args.iters, args.warmup)
            entry = {"available": True, "ms": ms, "rel_error": err, "ok": err <= 1e-2}
            if native:
                take = getattr(symm_mem, "_should_use_fused_all_gather_matmul_native", None)
                if take is not None:
                    entry["native_taken"] = bool(take(a, [b], 0, group))
            row[name] = entry
        except Exception as e:
            row[name] = {"available": False, "why": f"{type(e).__name__}: {e}"}
        finally:
            os.environ.pop(NATIVE_VARIABLE, None)
    return row


def figures(row, t):
    t_comm, t_gemm = row["allgather_ms"], row["gemm_ms"]
    tflops = 2.0 * row["M"] * row["N"] * row["K"] / (t * 1e-3) / 1e12
    overlap = (t_comm + t_gemm - t) / min(t_comm, t_gemm) if min(t_comm, t_gemm) > 0 else float("nan")
    return tflops, row["decomposed_ms"] / t, overlap, max(t_comm, t_gemm) / t


def print_table(rows, header):
    print("\n".join("# " + line for line in header))
    print("#      M      N      K  t_ag(ms) t_gemm(ms) method        time(ms)  TFLOP/s  speedup"
          "  overlap  ideal/t  rel.err  note")
    for r in rows:
        lead = f"{r['M']:8d} {r['N']:6d} {r['K']:6d} {r['allgather_ms']:9.3f} {r['gemm_ms']:10.3f}"
        methods = [("decomposed", {"available": True, "ms": r["decomposed_ms"], "rel_error": 0.0,
                                   "ok": True})]
        methods += [(name, r[name]) for name in ("torch_fused", "torch_native")]
        for name, e in methods:
            if not e["available"]:
                print(f"{lead} {name:12s}       n/a  {e['why'][:90]}")
                continue
            tflops, speedup, overlap, ideal = figures(r, e["ms"])
            note = "" if e["ok"] else "FAIL"
            if name == "torch_native" and e.get("native_taken") is False:
                note += " (PyTorch did not take its native path for this shape)"
            print(f"{lead} {name:12s} {e['ms']:9.3f} {tflops:8.1f} {speedup:7.2f}x {overlap:8.2f}"
                  f" {ideal:8.2f} {e['rel_error']:8.1e}  {note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", type=parse_shapes, default=None)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--b-layout", choices=("row", "col"), default="row")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    rank, world = init_world()
    symm_mem, symm_why = symmetric_memory()
    rows, skipped = [], []
    for m, n, k in args.shapes or default_shapes():
        if m % world:
            skipped.append(f"{m}x{n}x{k}: M is not divisible by the world size {world}")
            continue
        rows.append(run_shape(m, n, k, args, rank, world, symm_mem, symm_why))
    if rank == 0:
        header = [
            "torch_fused_ag_mm.py: PyTorch fused_all_gather_matmul vs NCCL all-gather + torch.mm",
            "date " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, NCCL "
            f"{'.'.join(map(str, torch.cuda.nccl.version()))}, W {world}, B {args.b_layout}-major",
            "command: " + " ".join(sys.argv),
            "NCCL_NVLS_ENABLE=" + os.environ["NCCL_NVLS_ENABLE"]
            + " TORCH_SYMM_MEM_DISABLE_MULTICAST=" + os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"],
            "time: the slowest rank's median of CUDA-event spans; overlap = (T_ag + T_gemm - T)"
            " / min(T_ag, T_gemm); ideal/t = max(T_ag, T_gemm) / T",
        ] + ["skipped " + s for s in skipped]
        print_table(rows, header)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"header": header, "rows": rows}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
