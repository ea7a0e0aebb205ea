"""The host time per call that the Python package adds to the C ABI call.

For one tiny problem (the compute is the same in every row, so the
differences are the layers' own cost), the median host time per call of
  public     asynctp.torch.fused_all_gather_matmul / fused_matmul_reduce_scatter
  dispatch   torch.ops.asynctp.* called directly (the custom op, no wrapper)
  c_abi+desc the C ABI call with its matrix descriptors and options built
             from the tensors on every call, as the op builds them
  c_abi      the bare C ABI call on prebuilt descriptors: the library's own
             host time plus one ctypes call
  python     the public call with the library's entry point replaced by a
             no-op: the package's own Python, descriptors and allocations
and the overhead of the package, public - c_abi. The rest of that
difference beyond `python` is the library's: its call on fresh outputs
rather than the same prebuilt ones. Each call is timed alone
(perf_counter_ns), the variants round-robin in blocks so that load drifting
on a shared machine hits them alike; medians after a warm-up. On CUDA the
calls are enqueued back to back on the current stream (host time only; a
tiny problem keeps the device ahead), synchronized between blocks.

Used by tests/python (the CUDA scenario reports it) and on its own:
    PYTHONPATH=python ASYNCTP_LIBRARY=build-cpu/src/capi/libasynctp_c.so \\
        python bench/python_overhead.py [--device cpu|cuda] [--calls N] [--json FILE]
A world of one (gloo for CPU tensors, NCCL for CUDA) unless run under
torchrun; rank 0 prints.
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

VARIANTS = ("public", "dispatch", "c_abi+desc", "c_abi", "python")
TARGET_ADDED_US = 20.0


def _callables(op, group, device, algorithm, m, k, n):
    """The four ways to make the same call of `op`, as zero-argument
    functions over tensors made here (fresh random values)."""
    import asynctp.torch as atp
    from asynctp import _capi
    from asynctp.torch import _group_comm, _ops, _tensors

    name = group.group_name
    W = group.size()
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    gen = torch.Generator().manual_seed(1234)
    b = torch.randn(k, n, generator=gen).to(device, dtype)
    comm = _group_comm.comm_for(name, device)
    if op == "fused_all_gather_matmul":
        a = torch.randn(m, k, generator=gen).to(device, dtype)
        c = torch.empty(W * m, n, device=device, dtype=dtype)
        entry = "asynctpFusedAllGatherMatmul"

        def public():
            atp.fused_all_gather_matmul(a, [b], 0, name, return_A=False, algorithm=algorithm)

        def dispatch():
            torch.ops.asynctp.fused_all_gather_matmul(a, [b], 0, name, False, algorithm)

        def matrices():
            return _tensors.all_gather_matrices(a, b, c, None, m, k, n, W)
    else:
        a = torch.randn(W * m, k, generator=gen).to(device, dtype)
        out = torch.empty(m, n, device=device, dtype=dtype)
        entry = "asynctpFusedMatmulReduceScatter"

        def public():
            atp.fused_matmul_reduce_scatter(a, b, "sum", 0, name, algorithm=algorithm)

        def dispatch():
            torch.ops.asynctp.fused_matmul_reduce_scatter(a, b, "sum", 0, name, algorithm)

        def matrices():
            return _tensors.reduce_scatter_matrices(a, b, out, W * m, k, n, W)

    def described():  # what the op's kernel does around the C call
        _ops._run(entry, comm, a, algorithm, matrices())

    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None
    prebuilt = matrices() + (_capi.options(algorithm, stream=stream),)
    fn, handle, info = getattr(_capi.lib(), entry), comm.handle, _capi.RunInfo()

    def bare():
        if fn(handle, *prebuilt, info) != 0:
            _capi.check(1)

    return {"public": public, "dispatch": dispatch, "c_abi+desc": described, "c_abi": bare,
            "python": public}


class _LibraryCallsStubbed:
    """While entered, the package's calls into the library do nothing (the
    `python` variant); its outputs are then left unwritten."""

    def __enter__(self):
        from asynctp.torch import _ops

        self._ops, self._call = _ops, _ops._capi.call
        _ops._capi.call = lambda fn, comm, *args: None

    def __exit__(self, *exc):
        self._ops._capi.call = self._call


def _stubbed_if(variant):
    return _LibraryCallsStubbed() if variant == "python" else contextlib.nullcontext()


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(group, device, *, calls=3000, warmup=200, block=100, algorithm="decomposed",
            m=16, k=16, n=16):
    """{op: {clock: {variant: median us per call, "added": public - c_abi}}}
    for both ops, clock "wall" (perf_counter) and "cpu" (the calling
    thread's CPU time: what the host spends on the call itself, without
    the time it sleeps while the library's threads work, the steadier
    figure on a busy CPU machine). Collective: every rank of `group` calls
    it alike."""
    results = {}
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    for op in ("fused_all_gather_matmul", "fused_matmul_reduce_scatter"):
        fns = _callables(op, group, device, algorithm, m, k, n)
        for variant, fn in fns.items():
            with _stubbed_if(variant):
                for _ in range(warmup):
                    fn()
        _sync(device)
        samples = {clock: {v: [] for v in VARIANTS} for clock in ("wall", "cpu")}
        for _ in range(max(1, calls // block)):
            for variant in VARIANTS:
                fn = fns[variant]
                walls, cpus = samples["wall"][variant], samples["cpu"][variant]
                with _stubbed_if(variant):
                    for _ in range(block):
                        c0 = cpu()
                        w0 = wall()
                        fn()
                        w1 = wall()
                        cpus.append(cpu() - c0)
                        walls.append(w1 - w0)
                _sync(device)
        results[op] = {}
        for clock, by_variant in samples.items():
            row = {v: statistics.median(by_variant[v]) / 1e3 for v in VARIANTS}
            row["added"] = row["public"] - row["c_abi"]
            results[op][clock] = row
    return results


def table(results, device):
    lines = [
        f"# host time per call, median us ({device}); added = public - c_abi, what the "
        f"package adds (target < {TARGET_ADDED_US:.0f})",
        f"{'op':<29}{'clock':>5}" + "".join(f"{v:>11}" for v in VARIANTS) + f"{'added':>8}",
    ]
    for op, clocks in results.items():
        for clock, row in clocks.items():
            lines.append(f"{op:<29}{clock:>5}" + "".join(f"{row[v]:>11.1f}" for v in VARIANTS)
                         + f"{row['added']:>8.1f}")
    return "\n".join(lines)


def _init_group(device):
    if "RANK" not in os.environ:  # a world of one, no launcher
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
    if device.type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.group.WORLD


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--algorithm", default="decomposed")
    parser.add_argument("--json", help="write the medians here (rank 0)")
    args = parser.parse_args()
    device = torch.device(args.device)
    group = _init_group(device)
    if device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    import asynctp.torch as atp

    try:
        results = measure(group, device, calls=args.calls, algorithm=args.algorithm)
        if dist.get_rank() == 0:
            print(f"# torch {torch.__version__}, world {group.size()}, "
                  f"algorithm {args.algorithm}, m = k = n = 16 per rank")
            print(table(results, device.type))
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
    finally:
        atp.destroy()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
