"""asynctp from Python: the fused all-gather + matmul and matmul + reduce-scatter
of tensor-parallel layers, with the communication hidden under the GEMM.

The package reaches the library through its C ABI (asynctp/c_api.h) with
ctypes, so it depends on no C++ ABI and one build serves any PyTorch from 2.4
on. The PyTorch ops and layers are in :mod:`asynctp.torch`.
"""

from asynctp._errors import (
    Error,
    InvalidArgumentError,
    MismatchError,
    UnsupportedError,
    WaitTimeoutError,
)

__all__ = [
    "Error",
    "InvalidArgumentError",
    "MismatchError",
    "UnsupportedError",
    "WaitTimeoutError",
]
__version__ = "0.1.0"
