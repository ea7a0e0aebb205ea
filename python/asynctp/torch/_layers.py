"""Megatron-style tensor-parallel linear layers with sequence parallelism,
forward and backward through the fused ops.

ColumnParallelLinear: the input is this rank's sequence shard
(s/W, ..., in_features); the output its slice of the features over the whole
sequence (s, ..., out_features/W).
    forward:      Y = all_gather(X) @ W^T               (fused all-gather + matmul)
    input grad:   dX = reduce_scatter(dY @ W)           (fused matmul + reduce-scatter)
    weight grad:  dW = dY^T @ all_gather(X)             (the gathered X the forward returned)

RowParallelLinear: the input is a feature slice over the whole sequence
(s, ..., in_features/W), the column layer's output; the output this rank's
sequence shard of the sum (s/W, ..., out_features).
    forward:      Y = reduce_scatter(X @ W^T)           (fused matmul + reduce-scatter)
    input grad:   dX = all_gather(dY) @ W               (fused all-gather + matmul)
    weight grad:  dW = all_gather(dY)^T @ X             (the gathered dY that returned)

The sequence is dimension `sequence_dim` (0, Megatron's [s, b, h]).
"""

import math

import torch

from asynctp.torch import _group_comm
from asynctp.torch._ops import fused_all_gather_matmul, fused_matmul_reduce_scatter


def _flat(t):
    return t.reshape(-1, t.shape[-1])


class _ColumnParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, dim, group_name, algorithm):
        gathered, (y,) = fused_all_gather_matmul(
            x, [weight.t()], dim, group_name, return_A=True, algorithm=algorithm
        )
        ctx.save_for_backward(gathered, weight)
        ctx.dim, ctx.group_name, ctx.algorithm = dim, group_name, algorithm
        ctx.has_bias = bias is not None
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, dy):
        gathered, weight = ctx.saved_tensors
        dy = dy.contiguous()
        dx = fused_matmul_reduce_scatter(
            dy, weight, "sum", ctx.dim, ctx.group_name, algorithm=ctx.algorithm
        )
        dw = _flat(dy).t() @ _flat(gathered)
        db = _flat(dy).sum(0) if ctx.has_bias else None
        return dx, dw, db, None, None, None


class _RowParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, reduce_bias_grad, dim, group_name, algorithm):
        y = fused_matmul_reduce_scatter(x, weight.t(), "sum", dim, group_name, algorithm=algorithm)
        ctx.save_for_backward(x, weight)
        ctx.dim, ctx.group_name, ctx.algorithm = dim, group_name, algorithm
        ctx.has_bias, ctx.reduce_bias_grad = bias is not None, reduce_bias_grad
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy_gathered, (dx,) = fused_all_gather_matmul(
            dy.contiguous(), [weight], ctx.dim, ctx.group_name, return_A=True,
            algorithm=ctx.algorithm,
        )
        dy_rows = _flat(dy_gathered)
        dw = dy_rows.t() @ _flat(x)
        db = None
        if ctx.has_bias:
            # The bias meets every row of the sequence, and each rank holds
            # only its shard of the output's rows: the gathered dY gives the
            # whole sum on every rank without a collective of its own.
            db = dy_rows.sum(0) if ctx.reduce_bias_grad else _flat(dy).sum(0)
        return dx, dw, db, None, None, None, None


class _ParallelLinear(torch.nn.Module):
    """The weight of a layer split over the group along `split`: "out"
    (rows, column-parallel) or "in" (columns, row-parallel)."""

    def __init__(self, in_features, out_features, group, split, *, sequence_dim, algorithm,
                 device, dtype):
        super().__init__()
        pg = _group_comm.resolve_group(group)
        self.group_name = pg.group_name
        self.world_size = pg.size()
        self.sequence_dim = sequence_dim
        self.algorithm = algorithm
        self.in_features, self.out_features = in_features, out_features
        features = out_features if split == "out" else in_features
        if features % self.world_size:
            raise ValueError(
                f"{split}_features: {features} must be divisible by the group size "
                f"{self.world_size}"
            )
        local = features // self.world_size
        shape = (local, in_features) if split == "out" else (out_features, local)
        self.weight = torch.nn.Parameter(torch.empty(shape, device=device, dtype=dtype))
        # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) over the
        # whole matrix; each rank's slice drawn independently.
        bound = 1 / math.sqrt(in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)


class ColumnParallelLinear(_ParallelLinear):
    """Y = X W^T + b with W's rows (out_features) split over the group and X's
    sequence dimension gathered. `weight` is this rank's (out_features/W,
    in_features) slice, `bias` its out_features/W slice."""

    def __init__(self, in_features, out_features, group=None, *, bias=True, sequence_dim=0,
                 algorithm="", device=None, dtype=None):
        super().__init__(in_features, out_features, group, "out", sequence_dim=sequence_dim,
                         algorithm=algorithm, device=device, dtype=dtype)
        local = self.weight.shape[0]
        self.bias = (
            torch.nn.Parameter(torch.zeros(local, device=device, dtype=dtype)) if bias else None
        )

    def forward(self, x):
        return _ColumnParallel.apply(x, self.weight, self.bias, self.sequence_dim,
                                     self.group_name, self.algorithm)


class RowParallelLinear(_ParallelLinear):
    """Y = X W^T + b with W's columns (in_features) split over the group, the
    partial products summed and scattered over the sequence dimension.
    `weight` is this rank's (out_features, in_features/W) slice; `bias` the
    whole (out_features) vector, the same on every rank, added to this
    rank's output shard.

    The bias's gradient sums over every row of the sequence, which the ranks
    hold in shards. By default backward returns that whole sum on every rank
    (from the gathered dY the input gradient needs anyway, so no extra
    collective), and the ranks' bias stays identical under any optimizer.
    With reduce_bias_grad=False each rank gets only its shard's sum, and the
    parameter is marked `sequence_parallel = True`, Megatron's convention for
    gradients that the training loop all-reduces over the group itself."""

    def __init__(self, in_features, out_features, group=None, *, bias=True,
                 reduce_bias_grad=True, sequence_dim=0, algorithm="", device=None, dtype=None):
        super().__init__(in_features, out_features, group, "in", sequence_dim=sequence_dim,
                         algorithm=algorithm, device=device, dtype=dtype)
        self.reduce_bias_grad = reduce_bias_grad
        self.bias = (
            torch.nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype))
            if bias else None
        )
        if self.bias is not None and not reduce_bias_grad:
            self.bias.sequence_parallel = True

    def forward(self, x):
        return _RowParallel.apply(x, self.weight, self.bias, self.reduce_bias_grad,
                                  self.sequence_dim, self.group_name, self.algorithm)
