"""asynctp for PyTorch: the fused ops as torch custom ops
(torch.ops.asynctp.*) and the tensor-parallel layers built on them.

    import asynctp.torch as atp
    A, [C] = atp.fused_all_gather_matmul(A_shard, [B], gather_dim=0, group=group)
    out = atp.fused_matmul_reduce_scatter(A, B, "sum", scatter_dim=0, group=group)

The communicator behind a torch.distributed group is made on the group's
first use (collectively) and cached: NCCL for CUDA tensors, the CPU
multi-process transport for CPU tensors (gloo groups).
"""

from asynctp.torch._group_comm import destroy
from asynctp.torch._layers import ColumnParallelLinear, RowParallelLinear
from asynctp.torch._ops import fused_all_gather_matmul, fused_matmul_reduce_scatter, last_run

__all__ = [
    "ColumnParallelLinear",
    "RowParallelLinear",
    "destroy",
    "fused_all_gather_matmul",
    "fused_matmul_reduce_scatter",
    "last_run",
]
