"""One rank of a multi-process test (harness.py starts W of these). Usage:
    rank_scenarios.py SCENARIO [ARGS...]
Exits 0 when every check passed; prints what failed otherwise. Every rank
makes every rank's inputs from the same seed, so it can compute the float64
reference of the whole group's result by itself."""

import datetime
import os
import signal
import sys
import time
import traceback

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))  # python_overhead
import numerics  # noqa: E402

import asynctp  # noqa: E402
import asynctp.torch as atp  # noqa: E402

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
DEVICE = torch.device("cuda", 0) if os.environ.get("ASYNCTP_TEST_BACKEND") == "nccl" else torch.device("cpu")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"[rank {RANK}] FAILED: {what}", flush=True)


def inputs(seed, *shapes, dtype=torch.float32):
    """Every rank's tensors of `shapes`, the same on every rank: a list per
    shape of W tensors, values rounded to `dtype` (the reference sees the
    rounded values)."""
    gen = torch.Generator().manual_seed(seed)
    return [[torch.randn(*shape, generator=gen).to(dtype) for _ in range(WORLD)]
            for shape in shapes]


def fallback_layout(shards, gather_dim):
    """torch's fallback of symm_mem.fused_all_gather_matmul: the gathered A
    with the layout it returns."""
    stacked = torch.stack([s.contiguous() for s in shards])
    flat = stacked.movedim(gather_dim + 1, 1).flatten(0, 1)
    return flat.movedim(0, gather_dim)


# ---- scenario: both ops against float64 ---------------------------------------------

NATIVE_ROWS = 256  # the CPU native tile's rows: native needs m per rank a multiple


def all_gather_cases():
    # (A_shard shape, gather_dim, B columns per B, dtype, algorithm, B column-major, return_A)
    cases = [
        ((NATIVE_ROWS, 48), 0, [40], torch.bfloat16, "native", False, True),
        ((NATIVE_ROWS, 48), 0, [40], torch.bfloat16, "native", True, False),
    ]
    for algorithm in ("pipelined", "decomposed", "auto"):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            cases += [
                ((12, 24), 0, [20], dtype, algorithm, True, True),
                ((4, 6, 16), 0, [8, 12], dtype, algorithm, False, True),
                ((3, 4, 16), 1, [10], dtype, algorithm, True, True),
                ((2, 3, 4, 8), -2, [6], dtype, algorithm, False, False),
            ]
    # The last dimension (K): gathered, then one matmul (decomposed).
    for algorithm in ("decomposed", "auto"):
        cases += [
            ((6, 16), 1, [12], torch.float32, algorithm, True, True),
            ((2, 5, 8), -1, [10, 6], torch.bfloat16, algorithm, False, True),
            ((3, 8), -1, [16], torch.float16, algorithm, False, False),
        ]
    return cases


def check_all_gather(seed):
    for i, (shape, gdim, ns, dtype, algorithm, col_major, return_A) in enumerate(all_gather_cases()):
        what = f"all_gather_matmul case {i}: A {shape} gather_dim {gdim} {dtype} {algorithm}"
        (shards,) = inputs(seed + i, shape, dtype=dtype)
        last = gdim % len(shape) == len(shape) - 1
        k = shape[-1] * (WORLD if last else 1)  # along K, B contracts every shard's
        Bs = [inputs(seed + 1000 * (j + 1) + i, (n, k) if col_major else (k, n), dtype=dtype)[0][0]
              for j, n in enumerate(ns)]
        Bs = [B.t() if col_major else B for B in Bs]  # the same B on every rank
        a_shard = shards[RANK].to(DEVICE)
        before = a_shard.clone()
        A, outs = atp.fused_all_gather_matmul(
            a_shard, [B.to(DEVICE) for B in Bs], gdim, dist.group.WORLD, return_A=return_A,
            algorithm=algorithm,
        )
        ran, reason = atp.last_run("fused_all_gather_matmul")
        if algorithm != "auto" or last:
            check(ran == "decomposed" if last else ran == algorithm, f"{what}: ran {ran} ({reason})")
        if last:  # torch's fallback: the shards side by side along K
            expected_A = torch.cat(shards, dim=-1)
        else:
            expected_A = fallback_layout(shards, gdim % len(shape))
        # At W = 1 torch's flatten is a view that keeps A_shard's own layout;
        # asynctp returns the gathered-dimension-outermost layout of W > 1
        # (along the last dimension a transposed view, where torch's is dense).
        if return_A and WORLD > 1 and not last:
            check(A.shape == expected_A.shape and A.stride() == expected_A.stride(),
                  f"{what}: gathered A {tuple(A.shape)} strides {A.stride()}, torch's fallback "
                  f"gives {tuple(expected_A.shape)} {expected_A.stride()}")
        if return_A:
            check(torch.equal(A.cpu(), expected_A), f"{what}: gathered A differs from the shards")
        else:
            check(A is None, f"{what}: return_A=False returned A")
        check(torch.equal(a_shard, before), f"{what}: A_shard was modified")
        for B, out in zip(Bs, outs):
            reference = torch.matmul(expected_A.double(), B.double())
            check(out.shape == reference.shape, f"{what}: C shape {tuple(out.shape)}")
            err = numerics.relative_error(out.cpu(), reference)
            bound = numerics.all_gather_matmul_bound(dtype)
            check(err <= bound, f"{what}: relative error {err:.3g} > {bound:.3g}")


def reduce_scatter_cases():
    # (A shape, scatter_dim, N, dtype, algorithm, reduce_op, B column-major)
    cases = [((WORLD * NATIVE_ROWS, 32), 0, 24, torch.bfloat16, "native", "sum", False)]
    for algorithm in ("pipelined", "decomposed", "auto"):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            cases += [
                ((WORLD * 6, 20), 0, 12, dtype, algorithm, "sum", True),
                ((WORLD * 2, 3, 16), 0, 10, dtype, algorithm, "avg", False),
                ((3, WORLD * 2, 16), 1, 8, dtype, algorithm, "sum", True),
                ((2, 3, WORLD, 8), -2, 6, dtype, algorithm, "sum", False),
                # The last dimension: B's columns scattered, B^T used in
                # place when B is column-major, copied when row-major.
                ((5, 16), -1, WORLD * 4, dtype, algorithm, "sum", True),
                ((2, 3, 12), 2, WORLD * 2, dtype, algorithm, "avg", False),
            ]
    cases.append(((64, 32), -1, WORLD * NATIVE_ROWS, torch.bfloat16, "native", "sum", True))
    return cases


def check_reduce_scatter(seed):
    for i, (shape, sdim, n, dtype, algorithm, op, col_major) in enumerate(reduce_scatter_cases()):
        what = f"matmul_reduce_scatter case {i}: A {shape} scatter_dim {sdim} {dtype} {algorithm} {op}"
        k = shape[-1]
        As, Bs = inputs(seed + 500 + i, shape, (n, k) if col_major else (k, n), dtype=dtype)
        Bs = [B.t() if col_major else B for B in Bs]
        a, b = As[RANK].to(DEVICE), Bs[RANK].to(DEVICE)
        out = atp.fused_matmul_reduce_scatter(a, b, op, sdim, dist.group.WORLD, algorithm=algorithm)
        ran, reason = atp.last_run("fused_matmul_reduce_scatter")
        if algorithm != "auto":
            check(ran == algorithm, f"{what}: ran {ran} ({reason})")
        ref = numerics.reduce_scatter_reference(As, Bs, RANK, sdim)
        check_reduce_scatter_output(what, out.cpu(), ref, dtype, op == "avg", "fp32")


def check_reduce_scatter_output(what, out, ref, dtype, average, partial_sum):
    """out (on the host) against its float64 reference
    (numerics.reduce_scatter_reference), element by element within the
    rigorous bound; and the check's own power: the same output missing one
    rank's partial must fail it."""
    bound = numerics.reduce_scatter_error_bound(ref, dtype, partial_sum, average=average)
    scale = 1 / WORLD if average else 1
    expected = ref.value * scale
    fault = numerics.beyond_bound(out, expected, bound)
    check(not fault, f"{what}: {fault}")
    missing = out.double() - ref.partials[-1] * scale
    check(numerics.beyond_bound(missing, expected, bound) != "",
          f"{what}: the bound accepts an output missing rank {WORLD - 1}'s partial")


TUNING_CALLS = 18  # asynctp::kMaxTuningCalls: six rounds of three for calls this short


def check_tuned(seed):
    """algorithm="tuned" (auto under the measured choice): the first calls
    measure the algorithms in turn, one then keeps the fastest, and every
    call is right and runs the same algorithm on every rank."""
    shape, n = (NATIVE_ROWS, 48), 40
    reasons = []
    for i in range(TUNING_CALLS + 2):
        what = f"tuned all_gather_matmul call {i + 1}"
        shards, Bs = inputs(seed + 7000 + i, shape, (shape[1], n))
        _, (out,) = atp.fused_all_gather_matmul(
            shards[RANK].to(DEVICE), [Bs[0].to(DEVICE)], 0, dist.group.WORLD, return_A=False,
            algorithm="tuned",
        )
        ran, reason = atp.last_run("fused_all_gather_matmul")
        reasons.append(reason)
        everyone = [None] * WORLD
        dist.all_gather_object(everyone, ran)
        check(len(set(everyone)) == 1, f"{what}: the ranks ran {everyone}")
        reference = torch.cat(shards).double() @ Bs[0].double()
        err = numerics.relative_error(out.cpu(), reference)
        bound = numerics.all_gather_matmul_bound(torch.float32)
        check(err <= bound, f"{what}: relative error {err:.3g} > {bound:.3g}")
    measuring = [r for r in reasons if r.startswith("measured choice: measuring ")]
    check(len(measuring) >= 2 * 2, f"tuned: {len(measuring)} measuring calls: {reasons[:3]}")
    check("kept for this problem" in reasons[-1] and reasons[-1] == reasons[-2],
          f"tuned: the last calls did not keep a measured choice: {reasons[-2:]}")


def scenario_ops(seed):
    seed = int(seed)
    check_all_gather(seed)
    check_reduce_scatter(seed)
    check_tuned(seed)


# ---- scenario: the TP layers, forward and backward ----------------------------------


def scenario_layers(seed):
    """A two-layer MLP, ColumnParallelLinear -> GELU -> RowParallelLinear, with
    sequence-parallel input and output, against the same MLP in float64 on
    one process: values and every gradient. The row layer's bias gradient
    both ways: whole on every rank (the default) and as this rank's shard
    (reduce_bias_grad=False), whose sum over the group must be the whole."""
    seed = int(seed)
    s, b, h, f = 4 * WORLD, 2, 16, 8 * WORLD
    gen = torch.Generator().manual_seed(seed)
    x_full = torch.randn(s, b, h, generator=gen)
    w1 = torch.randn(f, h, generator=gen) / h**0.5
    b1 = torch.randn(f, generator=gen)
    w2 = torch.randn(h, f, generator=gen) / f**0.5
    b2 = torch.randn(h, generator=gen)
    dy_full = torch.randn(s, b, h, generator=gen)

    # The float64 reference on the whole problem.
    xr = x_full.double().requires_grad_()
    w1r, b1r, w2r, b2r = (t.double().requires_grad_() for t in (w1, b1, w2, b2))
    yr = torch.nn.functional.gelu(xr @ w1r.t() + b1r) @ w2r.t() + b2r
    yr.backward(dy_full.double())

    # fp32 throughout: each output is a chain of a few fp32 GEMMs (e = 1e-5
    # each) and reduce-scatters (numerics.chained_reduce_scatter_bound);
    # the gradients chain twice as many. The sum of the bounds on the path,
    # with a factor 4 for the growth through GELU's derivative (at most ~1.13)
    # and the reduction of fp32 gradients over the sequence.
    e = numerics.GEMM_BOUND[torch.float32]
    rs = numerics.chained_reduce_scatter_bound(torch.float32, WORLD)
    forward_bound = e + rs
    backward_bound = 4 * (2 * e + 2 * rs)
    fl, sl = f // WORLD, s // WORLD
    sl_ = slice(RANK * sl, (RANK + 1) * sl)
    fl_ = slice(RANK * fl, (RANK + 1) * fl)

    for reduce_bias_grad in (True, False):
        col = atp.ColumnParallelLinear(h, f, dist.group.WORLD, device=DEVICE)
        row = atp.RowParallelLinear(f, h, dist.group.WORLD, device=DEVICE,
                                    reduce_bias_grad=reduce_bias_grad)
        check(row.bias.shape == (h,), f"row bias shape {tuple(row.bias.shape)}, wanted ({h},)")
        check(getattr(row.bias, "sequence_parallel", False) == (not reduce_bias_grad),
              f"row bias sequence_parallel mark with reduce_bias_grad={reduce_bias_grad}")
        with torch.no_grad():
            col.weight.copy_(w1[RANK * fl:(RANK + 1) * fl])
            col.bias.copy_(b1[RANK * fl:(RANK + 1) * fl])
            row.weight.copy_(w2[:, RANK * fl:(RANK + 1) * fl])
            row.bias.copy_(b2)
        x = x_full[RANK * sl:(RANK + 1) * sl].clone().to(DEVICE).requires_grad_()
        y = row(torch.nn.functional.gelu(col(x)))
        y.backward(dy_full[RANK * sl:(RANK + 1) * sl].to(DEVICE))
        row_bias_grad = row.bias.grad.detach().clone()
        if not reduce_bias_grad:
            # This rank's shard alone: the group's sum is the whole gradient.
            shard = dy_full[sl_].double().reshape(-1, h).sum(0)
            err = numerics.relative_error(row_bias_grad.cpu(), shard)
            check(err <= backward_bound, f"layers: row bias shard grad relative error {err:.3g}")
            dist.all_reduce(row_bias_grad)
        tag = "" if reduce_bias_grad else " (reduce_bias_grad=False, summed over the group)"
        for name, got, ref, bound in [
            ("y", y.detach(), yr.detach()[sl_], forward_bound),
            ("x.grad", x.grad, xr.grad[sl_], backward_bound),
            ("column weight grad", col.weight.grad, w1r.grad[fl_], backward_bound),
            ("column bias grad", col.bias.grad, b1r.grad[fl_], backward_bound),
            ("row weight grad", row.weight.grad, w2r.grad[:, fl_], backward_bound),
            ("row bias grad" + tag, row_bias_grad, b2r.grad, backward_bound),
        ]:
            err = numerics.relative_error(got.cpu(), ref)
            check(err <= bound, f"layers: {name} relative error {err:.3g} > {bound:.3g}")


# ---- scenario: torch.compile(fullgraph=True) ----------------------------------------


def check_direct_calls(seed):
    """Eager calls of the public functions skip the dispatcher: the same
    results as torch.ops.asynctp.*, bit for bit; under a dispatch mode
    (FakeTensorMode, as torch.compile and make_fx use) or on a tensor
    subclass they go through it, so the fake kernels answer."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from asynctp.torch import _ops

    name = dist.group.WORLD.group_name
    gen = torch.Generator().manual_seed(seed + RANK)
    a = torch.randn(4, 3, 16, generator=gen).to(DEVICE)
    b = torch.randn(16, 8, generator=gen).to(DEVICE)
    check(_ops._direct((a, b)), "direct: an eager call on plain tensors is not direct")
    check(_ops._direct((a, torch.nn.Parameter(b))), "direct: a Parameter is not direct")
    gathered, (c,) = atp.fused_all_gather_matmul(a, [b], 0, name, algorithm="decomposed")
    gathered_op, (c_op,) = torch.ops.asynctp.fused_all_gather_matmul(
        a, [b], 0, name, True, "decomposed")
    check(torch.equal(gathered, gathered_op) and torch.equal(c, c_op),
          "direct: the all-gather differs from torch.ops.asynctp's")
    _, outs = atp.fused_all_gather_matmul(a, [b], 0, name, return_A=False,
                                          algorithm="decomposed")
    check(torch.equal(outs[0], c), "direct: return_A=False changed the product")
    rs = atp.fused_matmul_reduce_scatter(c, b.t(), "sum", 0, name, algorithm="decomposed")
    rs_op = torch.ops.asynctp.fused_matmul_reduce_scatter(c, b.t(), "sum", 0, name, "decomposed")
    check(torch.equal(rs, rs_op), "direct: the reduce-scatter differs from torch.ops.asynctp's")

    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        fa, fb = mode.from_tensor(a), mode.from_tensor(b)
        check(not _ops._direct((fa, fb)), "direct: a call under FakeTensorMode is direct")
        fg, (fc,) = atp.fused_all_gather_matmul(fa, [fb], 0, name)
        frs = atp.fused_matmul_reduce_scatter(fc, fb.t(), "sum", 0, name)
    check(type(fc).__name__ == "FakeTensor" and tuple(fc.shape) == (4 * WORLD, 3, 8)
          and tuple(fg.shape) == (4 * WORLD, 3, 16),
          f"direct: under FakeTensorMode got {type(fc).__name__} {tuple(fc.shape)}")
    check(type(frs).__name__ == "FakeTensor" and tuple(frs.shape) == (4, 3, 16),
          f"direct: the fake reduce-scatter gave {type(frs).__name__} {tuple(frs.shape)}")


def scenario_compile(seed):
    """A module of both ops compiled with fullgraph=True (a graph break would
    raise), forward and backward, against its eager run; and the eager
    calls' direct path (check_direct_calls)."""
    seed = int(seed)
    check_direct_calls(seed)
    torch.manual_seed(seed)
    s, h, f = 2 * WORLD, 16, 4 * WORLD
    model = torch.nn.Sequential(
        atp.ColumnParallelLinear(h, f, dist.group.WORLD, device=DEVICE),
        torch.nn.ReLU(),
        atp.RowParallelLinear(f, h, dist.group.WORLD, device=DEVICE),
    )
    name = dist.group.WORLD.group_name

    def step(x):
        y = model(x)
        # The raw ops too, as a user calls them in a compiled function (they
        # have no autograd formula of their own: the layers carry it).
        w = model[0].weight.detach()
        _, (z,) = atp.fused_all_gather_matmul(y.detach(), [w.t()], 0, name)
        # And along the last dimension (transposed views: the fake results'
        # strides must be the real ones for the graph to hold).
        wide, _ = atp.fused_all_gather_matmul(y.detach(), [w.t().repeat(WORLD, 1)], -1, name)
        ones = torch.ones(WORLD * h, WORLD * 2, device=DEVICE)
        cols = atp.fused_matmul_reduce_scatter(wide.contiguous(), ones, "sum", -1, name)
        return y, atp.fused_matmul_reduce_scatter(z, w, "sum", 0, name) + cols.sum()

    x = torch.randn(s, 3, h, device=DEVICE, requires_grad=True)
    eager_y, eager_z = step(x)
    eager_y.sum().backward()
    eager_grad = x.grad.clone()
    x.grad = None
    compiled = torch.compile(step, fullgraph=True)
    y, z = compiled(x)
    y.sum().backward()
    # Inductor may fuse and reorder the fp32 elementwise work around the ops:
    # a few roundings of difference.
    for what, got, want in [("output", y.detach(), eager_y.detach()), ("raw ops", z, eager_z),
                            ("input gradient", x.grad, eager_grad)]:
        err = numerics.relative_error(got.cpu(), want.double().cpu())
        check(err <= 1e-5, f"compile: {what} differs from eager by {err:.3g}")


# ---- scenario: bad inputs, on every rank --------------------------------------------


def expect_error(what, fn, cls, *fragments):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the test names what it expected)
        ok = isinstance(e, cls) and isinstance(e, asynctp.Error)
        text = str(e)
        check(ok and all(f in text for f in fragments),
              f"{what}: wanted {cls.__name__} with {fragments}, got {type(e).__name__}: {text}")
        return
    check(False, f"{what}: no error raised")


def scenario_bad_inputs(bad_rank):
    """Rank `bad_rank` breaks a rule; it raises InvalidArgumentError naming
    the argument, every other rank MismatchError naming that rank; inputs
    untouched; the group still works afterwards."""
    bad_rank = int(bad_rank)
    g = dist.group.WORLD
    good_a = torch.randn(8, 16, device=DEVICE)
    good_b = torch.randn(16, 4, device=DEVICE)
    me_bad = RANK == bad_rank
    cases = [
        ("float64 A_shard", lambda: good_a.double(), lambda: good_b, "A_shard: dtype must be"),
        ("non-contiguous A_shard", lambda: torch.randn(16, 8, device=DEVICE).t(), lambda: good_b,
         "A_shard: must be contiguous"),
        ("1-D A_shard", lambda: torch.randn(16, device=DEVICE), lambda: good_b,
         "A_shard: must be a tensor of at least 2 dimensions"),
        ("B with the wrong K", lambda: good_a, lambda: torch.randn(15, 4, device=DEVICE),
         "Bs[0]: must have K = 16 rows"),
        ("B of another dtype", lambda: good_a, lambda: good_b.half(), "Bs[0]: dtype must match"),
        # No autograd formula: a call autograd would record is refused.
        ("A_shard requiring grad", lambda: good_a.clone().requires_grad_(), lambda: good_b,
         "A_shard, Bs: must not require grad while grad mode is on"),
    ]
    for what, make_a, make_b, rule in cases:
        a = make_a() if me_bad else good_a
        b = make_b() if me_bad else good_b
        a_before = a.clone()
        if me_bad:
            expect_error(what, lambda: atp.fused_all_gather_matmul(a, [b], 0, g),
                         asynctp.InvalidArgumentError, rule)
        else:
            expect_error(what, lambda: atp.fused_all_gather_matmul(a, [b], 0, g),
                         asynctp.MismatchError, f"rank {bad_rank}", rule)
        check(torch.equal(a, a_before), f"{what}: A_shard was modified")
    # A rule only the library sees: shards of different sizes (m disagrees).
    a = torch.randn(8 + (RANK == bad_rank) * 8, 16, device=DEVICE)
    expect_error("disagreeing m", lambda: atp.fused_all_gather_matmul(a, [good_b], 0, g),
                 asynctp.Error, "m")
    # reduce-scatter: a scatter dimension not divisible by W (on the bad rank).
    rows = 2 * WORLD + (1 if me_bad else 0)
    rs_a = torch.randn(rows, 16, device=DEVICE)
    if me_bad:
        expect_error("indivisible scatter dim",
                     lambda: atp.fused_matmul_reduce_scatter(rs_a, good_b, "sum", 0, g),
                     asynctp.InvalidArgumentError, "must be divisible by the group size")
    else:
        expect_error("indivisible scatter dim",
                     lambda: atp.fused_matmul_reduce_scatter(rs_a, good_b, "sum", 0, g),
                     asynctp.MismatchError, f"rank {bad_rank}")
    # The last dimension: a forced overlapping algorithm for the gather, and
    # an N the group does not divide for the scatter (the bad rank's calls).
    wide_b = torch.randn(WORLD * 16, 4, device=DEVICE)
    odd_n_b = torch.randn(16, 2 * WORLD + 1, device=DEVICE)
    last_dim_cases = [
        ("native along the last dimension",
         lambda: atp.fused_all_gather_matmul(good_a, [wide_b], -1, g, algorithm="native"),
         lambda: atp.fused_all_gather_matmul(good_a, [good_b], 0, g),
         "algorithm: 'native' cannot gather along the last dimension"),
        ("N not divisible, scattered along the last dimension",
         lambda: atp.fused_matmul_reduce_scatter(good_a, odd_n_b, "sum", -1, g),
         lambda: atp.fused_matmul_reduce_scatter(torch.randn(2 * WORLD, 16, device=DEVICE),
                                                 good_b, "sum", 0, g),
         "B: its N = " + str(2 * WORLD + 1) + " columns must be divisible by the group size"),
    ]
    for what, bad_call, good_call, rule in last_dim_cases:
        if me_bad:
            expect_error(what, bad_call, asynctp.InvalidArgumentError, rule)
        else:
            expect_error(what, good_call, asynctp.MismatchError, f"rank {bad_rank}")
    if me_bad:
        expect_error("reduce_op", lambda: atp.fused_matmul_reduce_scatter(
            torch.randn(2 * WORLD, 16, device=DEVICE), good_b, "max", 0, g),
            asynctp.InvalidArgumentError, "reduce_op: must be 'sum' or 'avg'")
    else:
        expect_error("reduce_op", lambda: atp.fused_matmul_reduce_scatter(
            torch.randn(2 * WORLD, 16, device=DEVICE), good_b, "sum", 0, g),
            asynctp.MismatchError, f"rank {bad_rank}")
    # Still usable: a good call gives the right answer.
    shards = [torch.randn(8, 16, generator=torch.Generator().manual_seed(r)) for r in range(WORLD)]
    _, (c,) = atp.fused_all_gather_matmul(shards[RANK].to(DEVICE), [good_b], 0, g)
    good_b_all = torch.empty_like(good_b)
    good_b_all.copy_(good_b)
    reference = torch.cat(shards).double() @ good_b.double().cpu()
    err = numerics.relative_error(c.cpu(), reference)
    check(err <= numerics.all_gather_matmul_bound(torch.float32), f"after errors: error {err:.3g}")


# ---- scenario: a rank killed ----------------------------------------------------------


def scenario_killed_rank(victim):
    """One call runs; then rank `victim` dies (SIGKILL) instead of making the
    next call. The others must raise, naming it, within the wait timeout."""
    victim = int(victim)
    g = dist.group.WORLD
    a, b = torch.randn(8, 16), torch.randn(16, 8)
    atp.fused_all_gather_matmul(a, [b], 0, g)
    if RANK == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        atp.fused_all_gather_matmul(a, [b], 0, g)
        check(False, "killed rank: the call succeeded without the victim")
    except asynctp.Error as e:
        elapsed = time.monotonic() - start
        print(f"[rank {RANK}] raised after {elapsed:.1f} s: {e}", flush=True)
        check(f"rank {victim}" in str(e), f"killed rank: the error does not name rank {victim}: {e}")
    # Skip torch.distributed's shutdown: its gloo group has lost a member.
    sys.stdout.flush()
    os._exit(1 if failures else 0)

# ---- scenario: CUDA (NCCL transport), one rank per GPU ------------------------------


def _cuda_inputs(seed, m, k, n, dtype):
    gen = torch.Generator().manual_seed(seed)
    shards = [torch.randn(m, k, generator=gen).to(dtype) for _ in range(WORLD)]
    b = torch.randn(k, n, generator=gen).to(dtype)
    return shards, b


def scenario_cuda(seed, report_path=""):
    """Every algorithm forced, against float64 and beside torch.mm; a CUDA
    graph of the op replayed 100 times; torch.compile; the host time per call
    of the Python op against the bare C ABI call."""
    import json

    seed = int(seed)
    g = dist.group.WORLD
    report = {"world_size": WORLD, "torch": torch.__version__, "cases": []}
    m, k, n = 1024, 1024, 1024
    dtype = torch.bfloat16
    shards, b = _cuda_inputs(seed, m, k, n, dtype)
    a_shard, b_dev = shards[RANK].cuda(), b.cuda()
    reference = torch.cat(shards).double() @ b.double()
    mm_err = numerics.relative_error(torch.mm(torch.cat(shards).cuda(), b_dev).cpu(), reference)
    bound = numerics.all_gather_matmul_bound(dtype)
    for algorithm in ("native", "pipelined", "decomposed", "auto"):
        _, (c,) = atp.fused_all_gather_matmul(a_shard, [b_dev], 0, g, algorithm=algorithm)
        torch.cuda.synchronize()
        ran, reason = atp.last_run("fused_all_gather_matmul")
        err = numerics.relative_error(c.cpu(), reference)
        report["cases"].append({"op": "all_gather_matmul", "algorithm": algorithm, "ran": ran,
                                "error": err, "torch_mm_error": mm_err, "reason": reason})
        check(algorithm == "auto" or ran == algorithm, f"cuda ag {algorithm}: ran {ran} ({reason})")
        check(err <= bound, f"cuda ag {algorithm}: error {err:.3g} > {bound:.3g} (torch.mm {mm_err:.3g})")
    # Reduce-scatter: every algorithm forced, native included.
    # Every rank makes every rank's A (and B) from the seed: the reference is
    # the whole group's sum.
    a_all, b_all = inputs(seed + 1, (WORLD * m, k), (k, n), dtype=dtype)
    rs_ref = numerics.reduce_scatter_reference(a_all, b_all, RANK)
    for algorithm in ("native", "pipelined", "decomposed", "auto"):
        out = atp.fused_matmul_reduce_scatter(a_all[RANK].cuda(), b_all[RANK].cuda(), "sum", 0, g,
                                              algorithm=algorithm)
        torch.cuda.synchronize()
        ran, reason = atp.last_run("fused_matmul_reduce_scatter")
        report["cases"].append({"op": "matmul_reduce_scatter", "algorithm": algorithm, "ran": ran,
                                "error": numerics.relative_error(out.cpu(), rs_ref.value),
                                "reason": reason})
        check(algorithm == "auto" or ran == algorithm, f"cuda rs {algorithm}: ran {ran} ({reason})")
        # NCCL's ring (decomposed) stores each step's running sum in the dtype.
        check_reduce_scatter_output(f"cuda rs {algorithm}", out.cpu(), rs_ref, dtype, False,
                                    "output_dtype" if ran == "decomposed" else "fp32")
    # Along the last dimension: the scatter of B's columns (B = weight.t(),
    # used in place) and the gather along K.
    b_cols = [B.t().contiguous().t() for B in b_all]  # column-major, as weight.t()
    cols_ref = numerics.reduce_scatter_reference(a_all, b_cols, RANK, -1)
    for algorithm in ("native", "pipelined", "decomposed"):
        out = atp.fused_matmul_reduce_scatter(a_all[RANK].cuda(), b_cols[RANK].cuda(), "sum", -1,
                                              g, algorithm=algorithm)
        torch.cuda.synchronize()
        ran, reason = atp.last_run("fused_matmul_reduce_scatter")
        check(ran == algorithm, f"cuda rs last dim {algorithm}: ran {ran} ({reason})")
        check_reduce_scatter_output(f"cuda rs last dim {algorithm}", out.cpu(), cols_ref, dtype,
                                    False, "output_dtype" if ran == "decomposed" else "fp32")
    wide_b = torch.cat([b] * WORLD).cuda()  # K = W k: every shard's columns
    A_wide, (c_wide,) = atp.fused_all_gather_matmul(a_shard, [wide_b], -1, g)
    torch.cuda.synchronize()
    wide_A_ref = torch.cat(shards, dim=-1)
    check(torch.equal(A_wide.cpu(), wide_A_ref), "cuda ag last dim: gathered A differs")
    err = numerics.relative_error(c_wide.cpu(), wide_A_ref.double() @ wide_b.double().cpu())
    check(err <= bound, f"cuda ag last dim: error {err:.3g} > {bound:.3g}")

    # CUDA graph: one warm-up call, capture, 100 replays with new inputs.
    static_a = a_shard.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        atp.fused_all_gather_matmul(static_a, [b_dev], 0, g)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _, (static_c,) = atp.fused_all_gather_matmul(static_a, [b_dev], 0, g)
    replays = 100
    for i in range(replays):
        new_shards, _ = _cuda_inputs(seed + 100 + i, m, k, n, dtype)
        static_a.copy_(new_shards[RANK].cuda())
        graph.replay()
    torch.cuda.synchronize()
    err = numerics.relative_error(static_c.cpu(), torch.cat(new_shards).double() @ b.double())
    report["graph_replays"] = {"replays": replays, "last_error": err}
    check(err <= bound, f"cuda graph: after {replays} replays error {err:.3g} > {bound:.3g}")

    # torch.compile(fullgraph=True).
    name = g.group_name
    compiled = torch.compile(lambda x, w: atp.fused_all_gather_matmul(x, [w], 0, name)[1][0] * 2,
                             fullgraph=True)
    got = compiled(a_shard, b_dev)
    torch.cuda.synchronize()
    err = numerics.relative_error(got.cpu(), 2 * reference)
    report["compile_error"] = err
    check(err <= bound, f"cuda compile: error {err:.3g} > {bound:.3g}")

    # Host time per call that the package adds to the C ABI call: the
    # benchmark's own measurement (bench/python_overhead.py), so that this
    # run and a CPU run of the benchmark report the same breakdown.
    import python_overhead

    overhead = python_overhead.measure(g, DEVICE)
    report["host_us_per_call"] = overhead
    if RANK == 0:
        print(python_overhead.table(overhead, "cuda"), flush=True)
    if report_path and RANK == 0:
        with open(report_path, "w") as f:
            json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1), flush=True)


def scenario_overhead():
    """The host-overhead benchmark's measurement (the CUDA scenario reports
    it on the device), briefly on the CPU: it runs, and every figure is a
    positive time."""
    import python_overhead

    results = python_overhead.measure(dist.group.WORLD, DEVICE, calls=200, warmup=20, block=50)
    print(python_overhead.table(results, DEVICE.type), flush=True)
    for op, clocks in results.items():
        for clock, row in clocks.items():
            check(all(0 < row[v] < 1e6 for v in python_overhead.VARIANTS),
                  f"overhead {op} {clock}: {row}")


SCENARIOS = {
    "ops": scenario_ops,
    "layers": scenario_layers,
    "compile": scenario_compile,
    "bad_inputs": scenario_bad_inputs,
    "killed_rank": scenario_killed_rank,
    "cuda": scenario_cuda,
    "overhead": scenario_overhead,
}


def main():
    name, args = sys.argv[1], sys.argv[2:]
    backend = os.environ.get("ASYNCTP_TEST_BACKEND", "gloo")
    if backend == "nccl":
        torch.cuda.set_device(0)
    dist.init_process_group(backend, rank=RANK, world_size=WORLD)
    try:
        SCENARIOS[name](*args)
    except Exception:  # noqa: BLE001 (reported, then the rank fails)
        traceback.print_exc()
        failures.append("exception")
    finally:
        atp.destroy()
        # Every rank reaches the group's teardown before any destroys it:
        # PyTorch 2.4's gloo teardown could hang in a rank whose peer had
        # already exited. Bounded, and skipped where a rank was killed.
        if backend == "gloo" and WORLD > 1 and name != "killed_rank":
            try:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
            except RuntimeError as e:
                print(f"[rank {RANK}] teardown barrier: {e}", flush=True)
        dist.destroy_process_group()
    print(f"[rank {RANK}] {name}: {len(failures)} failure(s)", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
