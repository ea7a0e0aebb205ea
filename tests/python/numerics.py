"""Reference and tolerances of the tests: float64 products and the error
bounds the library documents (README, "Matmul + reduce-scatter"; derived in
src/core/reference.hpp), as relative Frobenius errors."""

import math

import torch

# e: the bound of one GEMM output of the dtype (fp32 accumulation, one
# rounding to the dtype); u: the dtype's unit roundoff.
GEMM_BOUND = {torch.bfloat16: 4e-3, torch.float16: 5e-4, torch.float32: 1e-5}
UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def all_gather_matmul_bound(dtype):
    """Each output element is one GEMM's: e."""
    return GEMM_BOUND[dtype]


def reduce_scatter_bound(dtype, world_size, average=False):
    """W partials, each rounded to the dtype to cross the link, summed in fp32
    and rounded once: sqrt(W) e + (W-1) sqrt(W) 2^-24 + u; one more rounding
    (u) when the sum is then divided by W ("avg")."""
    e, u = GEMM_BOUND[dtype], UNIT_ROUNDOFF[dtype]
    bound = math.sqrt(world_size) * e + (world_size - 1) * math.sqrt(world_size) * 2.0**-24 + u
    return bound + (u if average else 0.0)


def relative_error(got, reference):
    """||got - ref||_F / ||ref||_F in float64; inf when anything is not finite
    (an element never written)."""
    got = got.double()
    if not torch.isfinite(got).all():
        return math.inf
    return ((got - reference).norm() / reference.norm()).item()
