"""Torch tensors as the C ABI's 2-D matrices, and the rules a tensor must
meet before it reaches the library. A rule broken returns its message (the
caller rejects the call collectively, so that every rank fails)."""

import torch

from asynctp import _capi

DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


def dtype_rule(name, t):
    if t.dtype not in DTYPES:
        return (
            f"{name}: dtype must be torch.bfloat16, torch.float16 or torch.float32, got {t.dtype}"
        )
    return None


def device_rule(name, t, device):
    if t.device != device:
        return f"{name}: must be on {device} (where the other operands are), got {t.device}"
    return None


def normalize_dim(name, dim, ndim):
    """`dim` in [0, ndim), or the broken rule's message."""
    if not -ndim <= dim < ndim:
        return None, f"{name}: must be in [{-ndim}, {ndim}) for a {ndim}-dimensional A, got {dim}"
    return dim % ndim, None


def b_strides(B):
    """(row_stride, col_stride) of a 2-D B that is row-major (contiguous) or
    column-major (the transpose of a contiguous tensor, e.g. weight.t()),
    else None."""
    if B.is_contiguous():
        return B.shape[1], 1
    if B.t().is_contiguous():
        return 1, B.shape[0]
    return None


def b_rule(name, B, k, dtype, device):
    if not isinstance(B, torch.Tensor) or B.dim() != 2:
        shape = tuple(B.shape) if isinstance(B, torch.Tensor) else type(B).__name__
        return f"{name}: must be a 2-D tensor (K x N), got {shape}"
    if B.dtype != dtype:
        return f"{name}: dtype must match A's ({dtype}), got {B.dtype}"
    rule = device_rule(name, B, device)
    if rule:
        return rule
    if B.shape[0] != k:
        return f"{name}: must have K = {k} rows (A's last dimension), got shape {tuple(B.shape)}"
    if b_strides(B) is None:
        return (
            f"{name}: must be row-major (contiguous) or column-major (a transposed contiguous "
            f"tensor), got strides {B.stride()}; call .contiguous()"
        )
    return None


def device_of(t):
    """(device kind code, index) of the C ABI."""
    if t.device.type == "cuda":
        return _capi.DEVICE_CUDA, t.device.index
    return _capi.DEVICE_CPU, 0


def matrix(t, rows, cols, strides=None):
    """The C matrix over `t`'s storage, rows x cols, row-major unless
    `strides` (row_stride, col_stride) says otherwise."""
    row_stride, col_stride = strides if strides is not None else (cols, 1)
    kind, index = device_of(t)
    return _capi.Matrix(
        t.data_ptr(), _capi.DTYPE_CODES[DTYPES[t.dtype]], kind, index, 0, rows, cols,
        row_stride, col_stride,
    )
