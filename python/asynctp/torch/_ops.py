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
"""

from typing import List, Tuple

import torch

from asynctp import _capi
from asynctp._errors import InvalidArgumentError
from asynctp.torch import _group_comm
from asynctp.torch._tensors import (
    b_rule,
    b_strides,
    device_rule,
    dtype_rule,
    matrix,
    normalize_dim,
)

_last_run = {}  # op name -> (algorithm, reason) of this process's last call


def last_run(op="fused_all_gather_matmul"):
    """(algorithm, reason) of this process's last eager call of `op`."""
    return _last_run.get(op)


def _moved_first_shape(shape, dim, factor_num, factor_den):
    """shape with `dim` moved first and its size scaled by num/den."""
    rest = [s for i, s in enumerate(shape) if i != dim]
    return [shape[dim] * factor_num // factor_den] + rest


# ---- rules (local; a broken one is rejected collectively) -------------------------


def _a_rules(name, A, dim_name, dim, last_dim_is):
    """The rules both ops set for their A and its gather/scatter dimension:
    (the dimension in [0, ndim - 1), None) or (None, the broken rule)."""
    if not isinstance(A, torch.Tensor) or A.dim() < 2:
        return None, f"{name}: must be a tensor of at least 2 dimensions"
    dim, rule = normalize_dim(dim_name, dim, A.dim())
    if rule:
        return None, rule
    if dim == A.dim() - 1:
        return None, (
            f"{dim_name}: must not be the last dimension ({last_dim_is}); asynctp "
            "gathers and scatters rows"
        )
    rule = dtype_rule(name, A)
    if rule:
        return None, rule
    if A.device.type not in ("cpu", "cuda"):
        return None, f"{name}: must be on the CPU or a CUDA device, got {A.device}"
    if not A.is_contiguous():
        return None, (
            f"{name}: must be contiguous, got strides {A.stride()} for shape "
            f"{tuple(A.shape)}; call .contiguous()"
        )
    return dim, None


def _all_gather_rules(A_shard, Bs, gather_dim):
    dim, rule = _a_rules("A_shard", A_shard, "gather_dim", gather_dim,
                         "K, the one contracted with B")
    if rule:
        return None, rule
    if len(Bs) == 0:
        return None, "Bs: must hold at least one B"
    for i, B in enumerate(Bs):
        rule = b_rule(f"Bs[{i}]", B, A_shard.shape[-1], A_shard.dtype, A_shard.device)
        if rule:
            return None, rule
    return dim, None


def _reduce_scatter_rules(A, B, reduce_op, scatter_dim, world_size):
    dim, rule = _a_rules("A", A, "scatter_dim", scatter_dim, "N of A @ B")
    if rule:
        return None, rule
    if reduce_op not in ("sum", "avg"):
        return None, f"reduce_op: must be 'sum' or 'avg', got {reduce_op!r}"
    if A.shape[dim] % world_size:
        return None, (
            f"A: dimension scatter_dim = {dim} (size {A.shape[dim]}) must be divisible by the "
            f"group size {world_size}"
        )
    rule = b_rule("B", B, A.shape[-1], A.dtype, A.device)
    if rule:
        return None, rule
    return dim, None


def _checked(comm, dim, rule):
    """The dimension, or every rank fails: this one with its rule, the peers
    (in the library's agreement) naming this rank."""
    if rule:
        comm.reject_call(rule)
        raise InvalidArgumentError(rule)
    return dim


def _options(tensor, algorithm):
    stream = None
    if tensor.device.type == "cuda":
        stream = torch.cuda.current_stream(tensor.device).cuda_stream
    try:
        return _capi.options(algorithm, stream=stream)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None


class _device_guard:
    """Makes a CUDA tensor's device current for the call (NCCL and the
    library enqueue on the current device's streams)."""

    def __init__(self, tensor):
        self._guard = torch.cuda.device(tensor.device) if tensor.device.type == "cuda" else None

    def __enter__(self):
        if self._guard is not None:
            self._guard.__enter__()

    def __exit__(self, *exc):
        if self._guard is not None:
            self._guard.__exit__(*exc)


# ---- fused all-gather + matmul -------------------------------------------------------


def _gathered_buffers(A_shard, Bs, dim, world_size, need_A):
    shape = _moved_first_shape(list(A_shard.shape), dim, world_size, 1)
    A_buf = A_shard.new_empty(shape) if need_A else None
    C_buf = A_shard.new_empty(shape[:-1] + [Bs[0].shape[1]])
    return A_buf, C_buf


@torch.library.custom_op("asynctp::fused_all_gather_matmul", mutates_args=())
def _fused_all_gather_matmul(
    A_shard: torch.Tensor,
    Bs: List[torch.Tensor],
    gather_dim: int,
    group_name: str,
    return_A: bool,
    algorithm: str,  # no default: PyTorch 2.4's schemas take none for str
) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    comm = _group_comm.comm_for(group_name, A_shard.device)
    W = comm.world_size
    dim = _checked(comm, *_all_gather_rules(A_shard, Bs, gather_dim))
    with _device_guard(A_shard):
        opts = _options(A_shard, algorithm)
        A_local = A_shard if dim == 0 else A_shard.movedim(dim, 0).contiguous()
        k = A_shard.shape[-1]
        m = A_local.numel() // k if k else 0
        need_A = return_A or len(Bs) > 1
        A_buf, C_buf = _gathered_buffers(A_shard, Bs, dim, W, need_A)
        B = Bs[0]
        n = B.shape[1]
        _last_run["fused_all_gather_matmul"] = _capi.all_gather_matmul(
            comm,
            matrix(A_local, m, k),
            matrix(B, k, n, b_strides(B)),
            matrix(C_buf, W * m, n),
            matrix(A_buf, W * m, k) if need_A else None,
            opts,
        )
        # The other Bs share the gathered A, already here: plain GEMMs.
        outs = [C_buf] + [torch.matmul(A_buf, B_i) for B_i in Bs[1:]]
    A_out = A_buf.movedim(0, dim) if return_A else A_shard.new_empty(0)
    return A_out, [out.movedim(0, dim) for out in outs]


@_fused_all_gather_matmul.register_fake
def _(A_shard, Bs, gather_dim, group_name, return_A, algorithm):
    W = _group_comm.group_size(group_name)
    dim, rule = _all_gather_rules(A_shard, Bs, gather_dim)
    if rule:
        raise InvalidArgumentError(rule)
    A_buf, C_buf = _gathered_buffers(A_shard, Bs, dim, W, True)
    outs = [C_buf] + [A_buf.new_empty(list(A_buf.shape[:-1]) + [B.shape[1]]) for B in Bs[1:]]
    A_out = A_buf.movedim(0, dim) if return_A else A_shard.new_empty(0)
    return A_out, [out.movedim(0, dim) for out in outs]


# ---- fused matmul + reduce-scatter ---------------------------------------------------


@torch.library.custom_op("asynctp::fused_matmul_reduce_scatter", mutates_args=())
def _fused_matmul_reduce_scatter(
    A: torch.Tensor,
    B: torch.Tensor,
    reduce_op: str,
    scatter_dim: int,
    group_name: str,
    algorithm: str,
) -> torch.Tensor:
    comm = _group_comm.comm_for(group_name, A.device)
    W = comm.world_size
    dim = _checked(comm, *_reduce_scatter_rules(A, B, reduce_op, scatter_dim, W))
    with _device_guard(A):
        opts = _options(A, algorithm)
        A_local = A if dim == 0 else A.movedim(dim, 0).contiguous()
        k, n = A.shape[-1], B.shape[1]
        M = A_local.numel() // k if k else 0
        out = A.new_empty(_moved_first_shape(list(A.shape[:-1]) + [n], dim, 1, W))
        _last_run["fused_matmul_reduce_scatter"] = _capi.matmul_reduce_scatter(
            comm,
            matrix(A_local, M, k),
            matrix(B, k, n, b_strides(B)),
            matrix(out, M // W, n),
            opts,
        )
        if reduce_op == "avg":
            out.div_(W)
    return out.movedim(0, dim)


@_fused_matmul_reduce_scatter.register_fake
def _(A, B, reduce_op, scatter_dim, group_name, algorithm):
    W = _group_comm.group_size(group_name)
    dim, rule = _reduce_scatter_rules(A, B, reduce_op, scatter_dim, W)
    if rule:
        raise InvalidArgumentError(rule)
    out = A.new_empty(_moved_first_shape(list(A.shape[:-1]) + [B.shape[1]], dim, 1, W))
    return out.movedim(0, dim)


# ---- the public functions ------------------------------------------------------------


def _name(group):
    return group if isinstance(group, str) else _group_comm.group_name(group)


def fused_all_gather_matmul(A_shard, Bs, gather_dim, group, *, return_A=True, algorithm=""):
    """all_gather(A_shard, gather_dim) @ B for each B in Bs, the gather
    overlapped with the first GEMM; as torch.ops.symm_mem.fused_all_gather_matmul.

    Returns (A, [A @ B for B in Bs]) where A is the gathered A_shard (None
    unless return_A). `group` is a ProcessGroup or its name (pass the name
    under torch.compile). `algorithm`: "auto", "native", "pipelined",
    "decomposed", or "" for ASYNCTP_ALGO / the planner.
    """
    A, outs = torch.ops.asynctp.fused_all_gather_matmul(
        A_shard, list(Bs), gather_dim, _name(group), return_A, algorithm
    )
    return (A if return_A else None), outs


def fused_matmul_reduce_scatter(A, B, reduce_op, scatter_dim, group, *, algorithm=""):
    """reduce_scatter(A @ B, reduce_op, scatter_dim) over the group, each
    chunk shipped as soon as its GEMM is done; as
    torch.ops.symm_mem.fused_matmul_reduce_scatter. reduce_op: "sum" or "avg".
    """
    return torch.ops.asynctp.fused_matmul_reduce_scatter(
        A, B, reduce_op, scatter_dim, _name(group), algorithm
    )
