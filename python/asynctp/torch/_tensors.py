"""Torch tensors as the C ABI's 2-D matrices, and the rules a tensor must
meet before it reaches the library. A rule broken returns its message (the
caller rejects the call collectively, so that every rank fails).

Every call of an op passes through here, so the common case reads each
tensor's attributes once, as plain ints (get_device() rather than .device,
stride tuples rather than transposed views); the messages are only built
for a rule that is broken.
"""

import ctypes
import struct

import torch

from asynctp import _capi

DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_DTYPE_CODES = {dtype: _capi.DTYPE_CODES[name] for dtype, name in DTYPES.items()}


def dtype_rule(name, t):
    if t.dtype not in DTYPES:
        return (
            f"{name}: dtype must be torch.bfloat16, torch.float16 or torch.float32, got {t.dtype}"
        )
    return None


def grad_rule(name, tensors):
    """The ops have no autograd formula (as torch.ops.symm_mem's): a call
    that autograd would have to record is refused rather than left to
    PyTorch's fallback, which would drop the gradient with only a warning."""
    if torch.is_grad_enabled():
        for t in tensors:  # a loop, not any(): no generator on every op call
            if t.requires_grad:
                return (
                    f"{name}: must not require grad while grad mode is on (the ops have no "
                    "autograd formula): use ColumnParallelLinear / RowParallelLinear, whose "
                    "backward runs through them, or call under torch.no_grad() or on detached "
                    "tensors"
                )
    return None


def normalize_dim(name, dim, ndim):
    """`dim` in [0, ndim), or the broken rule's message."""
    if not -ndim <= dim < ndim:
        return None, f"{name}: must be in [{-ndim}, {ndim}) for a {ndim}-dimensional A, got {dim}"
    return dim % ndim, None


def b_strides(B):
    """(row_stride, col_stride) of a 2-D B that is row-major (contiguous) or
    column-major (the transpose of a contiguous tensor, e.g. weight.t()),
    else None. torch's contiguity rule, on the strides: a dimension of size
    1 may have any stride."""
    k, n = B.shape
    row_stride, col_stride = B.stride()
    if (n == 1 or col_stride == 1) and (k == 1 or row_stride == n):
        return n, 1
    if (k == 1 or row_stride == 1) and (n == 1 or col_stride == k):
        return 1, k
    return None


def b_rule(name, B, k, dtype, device_index, k_is="A's last dimension"):
    """B's rules against the K it must have (`k_is` says what it is), A's
    dtype and device (get_device(): -1 on the CPU)."""
    if not isinstance(B, torch.Tensor) or B.dim() != 2:
        shape = tuple(B.shape) if isinstance(B, torch.Tensor) else type(B).__name__
        return f"{name}: must be a 2-D tensor (K x N), got {shape}"
    if B.dtype != dtype:
        return f"{name}: dtype must match A's ({dtype}), got {B.dtype}"
    if B.get_device() != device_index or not (B.is_cpu or B.is_cuda):
        where = "cpu" if device_index < 0 else f"cuda:{device_index}"
        return f"{name}: must be on {where} (where the other operands are), got {B.device}"
    if B.shape[0] != k:
        return f"{name}: must have K = {k} rows ({k_is}), got shape {tuple(B.shape)}"
    if b_strides(B) is None:
        return (
            f"{name}: must be row-major (contiguous) or column-major (a transposed contiguous "
            f"tensor), got strides {B.stride()}; call .contiguous()"
        )
    return None


def _device_of(t):
    """(device kind code, index) of the C ABI."""
    index = t.get_device()
    return (_capi.DEVICE_CPU, 0) if index < 0 else (_capi.DEVICE_CUDA, index)


# An op's matrices share one dtype and device (its rules saw to it): they
# are filled in one struct.pack_into, the fields in asynctpMatrix's order.
_MATRIX_FIELDS = "Qiiiiqqqq"  # data, dtype, device_kind, device_index, reserved, rows, cols,
#                               row_stride, col_stride
_FOUR_MATRICES = struct.Struct("=" + _MATRIX_FIELDS * 4)
_MatrixArray4 = _capi.Matrix * 4
assert _FOUR_MATRICES.size == ctypes.sizeof(_MatrixArray4), "asynctpMatrix's layout changed"


def _op_matrices(A, a_rows, B, k, n, out, out_rows, extra, extra_rows):
    """(A: a_rows x k, B: k x n, out: out_rows x n, extra: extra_rows x k or
    None): the C matrices of one op call, in one struct fill."""
    rs, cs = b_strides(B)
    kind, index = _device_of(A)
    dt = _DTYPE_CODES[A.dtype]
    mats = _MatrixArray4()
    _FOUR_MATRICES.pack_into(
        mats, 0,
        A.data_ptr(), dt, kind, index, 0, a_rows, k, k, 1,
        B.data_ptr(), dt, kind, index, 0, k, n, rs, cs,
        out.data_ptr(), dt, kind, index, 0, out_rows, n, n, 1,
        extra.data_ptr() if extra is not None else 0, dt, kind, index, 0, extra_rows, k, k, 1,
    )
    return mats[0], mats[1], mats[2], (mats[3] if extra is not None else None)


def all_gather_matrices(A_local, B, C, A_gathered, m, k, n, world_size):
    """The C ABI's (a_shard, b, c_out, a_gathered_out) of one all-gather
    call; a_gathered_out None when the gathered A is not wanted."""
    M = world_size * m
    return _op_matrices(A_local, m, B, k, n, C, M, A_gathered, M)


def reduce_scatter_matrices(A_local, B, out, M, k, n, world_size):
    """The C ABI's (a, b, out) of one reduce-scatter call."""
    return _op_matrices(A_local, M, B, k, n, out, M // world_size, None, 0)[:3]
