"""torch.ops.asynctp.fused_all_gather_matmul and fused_matmul_reduce_scatter:
custom ops with the argument conventions and results of
torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter, run
by the library through its C ABI. Fake implementations give torch.compile the
output shapes and strides, so that graphs trace through them with no break.

Dimensions: A may have any rank >= 2. The gather (scatter) dimension is moved
first, as torch's fallback does, and the rest flattened into rows: when it is
dimension 0 and A is contiguous, A is used in place; otherwise the move is the
one copy the op makes of A. The results are views with the fallback's layout
(the gathered dimension outermost in memory).

The last dimension is the one contracted with B (K) for the gather and the
one of B's columns (N) for the scatter, so neither is a gather or scatter of
rows, which is what the library's kernels overlap:
- fused_matmul_reduce_scatter along it is the library's reduce-scatter of the
  transposed product, (A @ B)^T = B^T @ A^T: B^T is used in place when B is
  column-major (weight.t(), as in nn.Linear), else copied once; A^T is a
  view. Every algorithm applies; the result is the transpose of the library's
  output rows (a view: the scattered columns outermost in memory).
- fused_all_gather_matmul along it gathers the shards' transposes through the
  library (its agreement and bounded waits; one copy of A_shard, and a GEMM
  of 8 columns that the library's call needs and whose result is unused),
  then one torch.matmul of the gathered A: decomposed, no overlap. Forcing
  native or pipelined there is an error. The gathered A is a transposed view.

Registration: torch.library.Library's define / impl (the CPU and CUDA
kernels) and register_fake, not torch.library.custom_op, whose Python
autograd and dynamo wrappers cost more per call than the rest of the
package together (bench/python_overhead.py). Like torch.ops.symm_mem's ops
they have no autograd kernel; a call autograd would have to record is
refused (_tensors.grad_rule): the layers carry the gradients.

Even so the dispatcher's own cost per call (boxing the Tensor[] argument
and the (Tensor, Tensor[]) result) is as large as the rest of the package's
Python, so the public functions call the kernel directly where the
dispatcher would call it anyway: an eager call on plain tensors, with no
torch.compile trace, no dispatch or function mode (FakeTensorMode, make_fx's
proxies) and no functorch transform active (_direct). Anything else goes
through torch.ops.asynctp.*, which is also what compiled graphs hold.
"""

import torch

from asynctp import _capi
from asynctp._errors import InvalidArgumentError
from asynctp.torch import _group_comm
from asynctp.torch._tensors import (
    DTYPES,
    all_gather_matrices,
    b_rule,
    grad_rule,
    normalize_dim,
    reduce_scatter_matrices,
)

_LIB = torch.library.Library("asynctp", "DEF")
# Inductor must hand the ops their inputs with the strides eager mode has
# (the rules require a contiguous A): PyTorch 2.4's inductor otherwise may
# pick another layout for a custom op's input. needs_exact_strides where
# PyTorch has it, needs_fixed_stride_order before.
_STRIDE_TAGS = tuple(
    getattr(torch.Tag, name)
    for name in ("needs_exact_strides", "needs_fixed_stride_order")
    if hasattr(torch.Tag, name)
)[:1]
_LIB.define(
    "fused_all_gather_matmul(Tensor A_shard, Tensor[] Bs, int gather_dim, str group_name, "
    "bool return_A, str algorithm) -> (Tensor, Tensor[])",
    tags=_STRIDE_TAGS,
)
# No defaults in the schemas: PyTorch 2.4's take none for str.
_LIB.define(
    "fused_matmul_reduce_scatter(Tensor A, Tensor B, str reduce_op, int scatter_dim, "
    "str group_name, str algorithm) -> Tensor",
    tags=_STRIDE_TAGS,
)

_last_run = {}  # op name -> the RunInfo of this process's last call


def last_run(op="fused_all_gather_matmul"):
    """(algorithm, reason) of this process's last eager call of `op`."""
    info = _last_run.get(op)
    return _capi.run_info(info) if info is not None else None


def _moved_first_shape(shape, dim, factor_num, factor_den):
    """shape (a new list) with `dim` moved first and its size scaled by num/den."""
    shape = list(shape)
    first = shape.pop(dim)
    shape.insert(0, first * factor_num // factor_den)
    return shape


# ---- rules (local; a broken one is rejected collectively) -------------------------


def _a_rules(name, A, dim_name, dim):
    """The rules both ops set for their A and its gather/scatter dimension:
    (the dimension in [0, ndim - 1), None) or (None, the broken rule)."""
    if not isinstance(A, torch.Tensor) or A.dim() < 2:
        return None, f"{name}: must be a tensor of at least 2 dimensions"
    ndim = A.dim()
    dim, rule = normalize_dim(dim_name, dim, ndim)
    if rule:
        return None, rule
    if A.dtype not in DTYPES:
        return None, (
            f"{name}: dtype must be torch.bfloat16, torch.float16 or torch.float32, got {A.dtype}"
        )
    if not (A.is_cpu or A.is_cuda):
        return None, f"{name}: must be on the CPU or a CUDA device, got {A.device}"
    if not A.is_contiguous():
        return None, (
            f"{name}: must be contiguous, got strides {A.stride()} for shape "
            f"{tuple(A.shape)}; call .contiguous()"
        )
    return dim, None


def _all_gather_rules(A_shard, Bs, gather_dim, world_size):
    dim, rule = _a_rules("A_shard", A_shard, "gather_dim", gather_dim)
    if rule:
        return None, rule
    if len(Bs) == 0:
        return None, "Bs: must hold at least one B"
    k, dtype, index = A_shard.shape[-1], A_shard.dtype, A_shard.get_device()
    k_is = "A's last dimension"
    if dim == A_shard.dim() - 1:  # B contracts the gathered K of every rank
        k, k_is = k * world_size, "the group size x A_shard's last dimension, the gathered K"
    for i, B in enumerate(Bs):
        rule = b_rule(f"Bs[{i}]", B, k, dtype, index, k_is)
        if rule:
            return None, rule
    return dim, None


def _reduce_scatter_rules(A, B, reduce_op, scatter_dim, world_size):
    dim, rule = _a_rules("A", A, "scatter_dim", scatter_dim)
    if rule:
        return None, rule
    if reduce_op != "sum" and reduce_op != "avg":
        return None, f"reduce_op: must be 'sum' or 'avg', got {reduce_op!r}"
    if dim == A.dim() - 1:  # the output's last dimension, B's columns, is scattered
        rule = b_rule("B", B, A.shape[-1], A.dtype, A.get_device())
        if rule is None and B.shape[1] % world_size:
            rule = (
                f"B: its N = {B.shape[1]} columns must be divisible by the group size "
                f"{world_size} (scatter_dim is the last dimension: N is scattered)"
            )
        return dim, rule
    if A.shape[dim] % world_size:
        return None, (
            f"A: dimension scatter_dim = {dim} (size {A.shape[dim]}) must be divisible by the "
            f"group size {world_size}"
        )
    return dim, b_rule("B", B, A.shape[-1], A.dtype, A.get_device())


def _checked(comm, dim, rule):
    """The dimension, or every rank fails: this one with its rule, the peers
    (in the library's agreement) naming this rank."""
    if rule:
        comm.reject_call(rule)
        raise InvalidArgumentError(rule)
    return dim


# ---- the call into the library ---------------------------------------------------------

_current_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _run(entry_point, comm, tensor, algorithm, matrices):
    """The library's `entry_point` on `matrices` with the call's options: on
    torch's current stream of a CUDA tensor's device, made current for the
    call (NCCL and the library enqueue on the current device's streams)."""
    index = tensor.get_device()
    stream = _current_raw_stream(index) if index >= 0 else None
    try:
        opts = _capi.options(algorithm, stream=stream)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    fn = getattr(_capi.lib(), entry_point)
    if index < 0 or torch._C._cuda_getDevice() == index:
        return _capi.call(fn, comm, *matrices, opts)
    with torch.cuda.device(index):
        return _capi.call(fn, comm, *matrices, opts)


# ---- fused all-gather + matmul -------------------------------------------------------


def _gathered_buffers(A_shard, Bs, dim, world_size, need_A):
    # Sizes as separate ints: new_empty parses them faster than a list.
    sizes = _moved_first_shape(A_shard.shape, dim, world_size, 1)
    A_buf = A_shard.new_empty(*sizes) if need_A else None
    sizes[-1] = Bs[0].shape[1]
    return A_buf, A_shard.new_empty(*sizes)


def _fused_all_gather_matmul(A_shard, Bs, gather_dim, group_name, return_A, algorithm):
    """The op's CPU and CUDA kernel: its schema returns a Tensor for A even
    when it is not wanted (an empty one)."""
    A, outs = _all_gather(A_shard, Bs, gather_dim, group_name, return_A, algorithm)
    return (A if A is not None else A_shard.new_empty(0)), outs


def _all_gather(A_shard, Bs, gather_dim, group_name, return_A, algorithm):
    """(the gathered A or None unless return_A, [A @ B for B in Bs])."""
    comm = _group_comm.comm_for_tensor(group_name, A_shard)
    W = comm.world_size
    dim, rule = _all_gather_rules(A_shard, Bs, gather_dim, W)
    last = dim is not None and dim == A_shard.dim() - 1
    if last and not rule and algorithm not in _LAST_DIM_GATHER_ALGORITHMS:
        rule = (
            f"algorithm: {algorithm!r} cannot gather along the last dimension (K, the one "
            "contracted with B): that gather runs decomposed; use '', 'auto', 'tuned' or "
            "'decomposed'"
        )
    dim = _checked(comm, dim, rule or grad_rule("A_shard, Bs", [A_shard, *Bs]))
    if last:
        return _gather_last_dim(comm, A_shard, Bs, return_A)
    A_local = A_shard if dim == 0 else A_shard.movedim(dim, 0).contiguous()
    k = A_shard.shape[-1]
    m = A_local.numel() // k if k else 0
    need_A = return_A or len(Bs) > 1
    A_buf, C_buf = _gathered_buffers(A_shard, Bs, dim, W, need_A)
    B = Bs[0]
    _last_run["fused_all_gather_matmul"] = _run(
        "asynctpFusedAllGatherMatmul", comm, A_shard, algorithm,
        all_gather_matrices(A_local, B, C_buf, A_buf, m, k, B.shape[1], W),
    )
    # The other Bs share the gathered A, already here: plain GEMMs.
    outs = [C_buf] + [torch.matmul(A_buf, B_i) for B_i in Bs[1:]]
    A_out = A_buf if return_A else None
    if dim == 0:
        return A_out, outs
    return (A_out.movedim(0, dim) if return_A else None), [out.movedim(0, dim) for out in outs]


def _fused_all_gather_matmul_fake(A_shard, Bs, gather_dim, group_name, return_A, algorithm):
    W = _group_comm.group_size(group_name)
    dim, rule = _all_gather_rules(A_shard, Bs, gather_dim, W)
    if rule:
        raise InvalidArgumentError(rule)
    if dim == A_shard.dim() - 1:
        A_mm = _last_dim_gathered(A_shard, W)
        return (A_mm if return_A else A_shard.new_empty(0)), [A_mm @ B for B in Bs]
    A_buf, C_buf = _gathered_buffers(A_shard, Bs, dim, W, True)
    outs = [C_buf] + [A_buf.new_empty(list(A_buf.shape[:-1]) + [B.shape[1]]) for B in Bs[1:]]
    A_out = A_buf.movedim(0, dim) if return_A else A_shard.new_empty(0)
    return A_out, [out.movedim(0, dim) for out in outs]


# The gather along the last dimension (see the top of this file).
_LAST_DIM_GATHER_ALGORITHMS = ("", "auto", "tuned", "decomposed")
_PROBE_COLUMNS = 8  # the library call's B: the fewest columns every algorithm takes


def _last_dim_gathered(A_shard, W, gathered_t=None):
    """The gathered A (..., W k) as the transpose of the library's gathered
    rows (W k x M); a fresh buffer when `gathered_t` is not given."""
    k = A_shard.shape[-1]
    M = A_shard.numel() // k if k else 0
    if gathered_t is None:
        gathered_t = A_shard.new_empty(W * k, M)
    return gathered_t.t().reshape(*A_shard.shape[:-1], W * k)


def _gather_last_dim(comm, A_shard, Bs, return_A):
    W = comm.world_size
    k = A_shard.shape[-1]
    M = A_shard.numel() // k if k else 0
    shard_t = A_shard.reshape(M, k).t().contiguous()  # its rows: the shard's columns
    gathered_t = A_shard.new_empty(W * k, M)
    probe = A_shard.new_zeros(M, _PROBE_COLUMNS)
    unused = A_shard.new_empty(W * k, _PROBE_COLUMNS)
    _last_run["fused_all_gather_matmul"] = _run(
        "asynctpFusedAllGatherMatmul", comm, A_shard, "decomposed",
        all_gather_matrices(shard_t, probe, unused, gathered_t, k, M, _PROBE_COLUMNS, W),
    )
    A_mm = _last_dim_gathered(A_shard, W, gathered_t)
    outs = [torch.matmul(A_mm, B) for B in Bs]
    return (A_mm if return_A else None), outs


# ---- fused matmul + reduce-scatter ---------------------------------------------------


def _fused_matmul_reduce_scatter(A, B, reduce_op, scatter_dim, group_name, algorithm):
    comm = _group_comm.comm_for_tensor(group_name, A)
    W = comm.world_size
    dim, rule = _reduce_scatter_rules(A, B, reduce_op, scatter_dim, W)
    dim = _checked(comm, dim, rule or grad_rule("A, B", [A, B]))
    if dim == A.dim() - 1:
        out = _scatter_last_dim(comm, A, B, algorithm)
        return out.div_(W) if reduce_op == "avg" else out
    A_local = A if dim == 0 else A.movedim(dim, 0).contiguous()
    k, n = A.shape[-1], B.shape[1]
    M = A_local.numel() // k if k else 0
    sizes = _moved_first_shape(A.shape, dim, 1, W)
    sizes[-1] = n
    out = A.new_empty(*sizes)
    _last_run["fused_matmul_reduce_scatter"] = _run(
        "asynctpFusedMatmulReduceScatter", comm, A, algorithm,
        reduce_scatter_matrices(A_local, B, out, M, k, n, W),
    )
    if reduce_op == "avg":
        out.div_(W)
    return out if dim == 0 else out.movedim(0, dim)


def _scatter_last_dim_out(A, B, W):
    """The output (..., N / W) as the transpose of the library's (N / W x M)."""
    k = A.shape[-1]
    M = A.numel() // k if k else 0
    out_t = A.new_empty(B.shape[1] // W, M)
    return out_t, out_t.t().reshape(*A.shape[:-1], B.shape[1] // W)


def _scatter_last_dim(comm, A, B, algorithm):
    """reduce_scatter(A @ B) along N as the library's reduce-scatter of rows
    of (A @ B)^T = B^T @ A^T (see the top of this file)."""
    W = comm.world_size
    k, n = A.shape[-1], B.shape[1]
    M = A.numel() // k if k else 0
    B_t = B.t()
    if not B_t.is_contiguous():
        B_t = B_t.contiguous()
    out_t, out = _scatter_last_dim_out(A, B, W)
    _last_run["fused_matmul_reduce_scatter"] = _run(
        "asynctpFusedMatmulReduceScatter", comm, A, algorithm,
        reduce_scatter_matrices(B_t, A.reshape(M, k).t(), out_t, n, k, M, W),
    )
    return out


def _fused_matmul_reduce_scatter_fake(A, B, reduce_op, scatter_dim, group_name, algorithm):
    W = _group_comm.group_size(group_name)
    dim, rule = _reduce_scatter_rules(A, B, reduce_op, scatter_dim, W)
    if rule:
        raise InvalidArgumentError(rule)
    if dim == A.dim() - 1:
        return _scatter_last_dim_out(A, B, W)[1]
    sizes = _moved_first_shape(A.shape, dim, 1, W)
    sizes[-1] = B.shape[1]
    return A.new_empty(*sizes).movedim(0, dim)


for _name_, _kernel, _fake in (
    ("fused_all_gather_matmul", _fused_all_gather_matmul, _fused_all_gather_matmul_fake),
    ("fused_matmul_reduce_scatter", _fused_matmul_reduce_scatter,
     _fused_matmul_reduce_scatter_fake),
):
    for _key in ("CPU", "CUDA"):
        _LIB.impl(_name_, _kernel, _key)
    torch.library.register_fake(f"asynctp::{_name_}", _fake, lib=_LIB)

_all_gather_op = torch.ops.asynctp.fused_all_gather_matmul.default
_reduce_scatter_op = torch.ops.asynctp.fused_matmul_reduce_scatter.default


# ---- the public functions ------------------------------------------------------------


def _name(group):
    return group if isinstance(group, str) else _group_comm.group_name(group)


_dispatch_stack_len = getattr(torch._C, "_len_torch_dispatch_stack", None)
_function_mode_on = getattr(torch._C, "_is_torch_function_mode_enabled", None)
_functorch_layer = getattr(getattr(torch._C, "_functorch", None), "peek_interpreter_stack", None)
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
_CAN_BE_DIRECT = None not in (_dispatch_stack_len, _function_mode_on, _functorch_layer,
                              _is_compiling)


def _direct(tensors):
    """Whether a call may run the op's kernel without the dispatcher: an
    eager call on plain tensors that nothing would route elsewhere (see the
    top of this file). A PyTorch that lacks one of the checks always
    dispatches."""
    if (not _CAN_BE_DIRECT or _is_compiling() or _dispatch_stack_len() or _function_mode_on()
            or _functorch_layer() is not None):
        return False
    for t in tensors:
        # nn.Parameter adds no dispatch of its own (its torch function is
        # disabled); any other subclass may (DTensor, FakeTensor).
        if type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
            return False
    return True


def fused_all_gather_matmul(A_shard, Bs, gather_dim, group, *, return_A=True, algorithm=""):
    """all_gather(A_shard, gather_dim) @ B for each B in Bs, the gather
    overlapped with the first GEMM; as torch.ops.symm_mem.fused_all_gather_matmul.

    Returns (A, [A @ B for B in Bs]) where A is the gathered A_shard (None
    unless return_A). `group` is a ProcessGroup or its name (pass the name
    under torch.compile). `algorithm`: "auto", "tuned" (auto under the
    measured choice: a problem's first calls time each algorithm, then the
    group keeps the fastest), "native", "pipelined", "decomposed", or "" for
    ASYNCTP_ALGO / the planner.
    """
    Bs = list(Bs)
    if _direct((A_shard, *Bs)):
        return _all_gather(A_shard, Bs, gather_dim, _name(group), return_A, algorithm)
    A, outs = _all_gather_op(A_shard, Bs, gather_dim, _name(group), return_A, algorithm)
    return (A if return_A else None), outs


def fused_matmul_reduce_scatter(A, B, reduce_op, scatter_dim, group, *, algorithm=""):
    """reduce_scatter(A @ B, reduce_op, scatter_dim) over the group, each
    chunk shipped as soon as its GEMM is done; as
    torch.ops.symm_mem.fused_matmul_reduce_scatter. reduce_op: "sum" or "avg".
    `algorithm`: as fused_all_gather_matmul's.
    """
    if _direct((A, B)):
        return _fused_matmul_reduce_scatter(A, B, reduce_op, scatter_dim, _name(group), algorithm)
    return _reduce_scatter_op(A, B, reduce_op, scatter_dim, _name(group), algorithm)
