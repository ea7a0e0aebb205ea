"""The C ABI (include/asynctp/c_api.h) through ctypes: the structs, the
function signatures, and one place that turns a status code into an
exception. Nothing here knows PyTorch.

The shared library is found, in order, at $ASYNCTP_LIBRARY (a path to
libasynctp_c.so, e.g. one built with CMake: build/src/capi/libasynctp_c.so),
then inside this package (where `pip install .` puts it).
"""

import ctypes
import os
import threading

from asynctp._errors import error_for

API_VERSION = 1
UNIQUE_ID_BYTES = 128
REASON_BYTES = 512

DTYPE_CODES = {"bf16": 0, "fp16": 1, "fp32": 2}
DEVICE_CPU, DEVICE_CUDA, DEVICE_HIP = 0, 1, 2
ALGORITHM_CODES = {"": 0, "auto": 1, "native": 2, "pipelined": 3, "decomposed": 4}
ALGORITHM_NAMES = {code: name for name, code in ALGORITHM_CODES.items() if code}
TUNE_ON = 1  # asynctpTuneOn
# What a call's `algorithm` string asks of the library: (asynctpAlgorithm_t,
# asynctpTune_t). "tuned" is auto under the measured choice (ASYNCTP_TUNE=on
# for these calls): a problem's first calls time each algorithm and the
# group keeps the fastest.
ALGORITHM_SETTINGS = {**{name: (code, 0) for name, code in ALGORITHM_CODES.items()},
                      "tuned": (ALGORITHM_CODES["auto"], TUNE_ON)}
RESULT_NAMES = {
    1: "invalid_argument",
    2: "unsupported",
    3: "timeout",
    4: "mismatch",
    5: "backend",
    6: "internal",
}


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class Matrix(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("device_kind", ctypes.c_int32),
        ("device_index", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("row_stride", ctypes.c_int64),
        ("col_stride", ctypes.c_int64),
    ]


class Options(ctypes.Structure):
    _fields_ = [
        ("algorithm", ctypes.c_int32),
        ("tune", ctypes.c_int32),
        ("wait_timeout_ms", ctypes.c_int64),
        ("tile_m", ctypes.c_int64),
        ("tile_n", ctypes.c_int64),
        ("stream", ctypes.c_void_p),
    ]


class RunInfo(ctypes.Structure):
    _fields_ = [
        ("algorithm", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("tile_m", ctypes.c_int64),
        ("tile_n", ctypes.c_int64),
        ("reason", ctypes.c_char * REASON_BYTES),
    ]


_comm_t = ctypes.c_void_p
_P = ctypes.POINTER

_SIGNATURES = {
    "asynctpGetLastError": (ctypes.c_char_p, []),
    "asynctpGetVersion": (ctypes.c_int, []),
    "asynctpHasNccl": (ctypes.c_int, []),
    "asynctpCpuGetUniqueId": (ctypes.c_int, [_P(UniqueId)]),
    "asynctpCpuCommInitRank": (
        ctypes.c_int,
        [_P(_comm_t), ctypes.c_int, _P(UniqueId), ctypes.c_int, ctypes.c_int, ctypes.c_int64],
    ),
    "asynctpNcclGetUniqueId": (ctypes.c_int, [_P(UniqueId)]),
    "asynctpNcclCommInitRank": (
        ctypes.c_int,
        [_P(_comm_t), ctypes.c_int, _P(UniqueId), ctypes.c_int, ctypes.c_int],
    ),
    "asynctpCommFromNccl": (ctypes.c_int, [_P(_comm_t), ctypes.c_void_p]),
    "asynctpCommDestroy": (ctypes.c_int, [_comm_t]),
    "asynctpCommRank": (ctypes.c_int, [_comm_t, _P(ctypes.c_int)]),
    "asynctpCommWorldSize": (ctypes.c_int, [_comm_t, _P(ctypes.c_int)]),
    "asynctpCommBackend": (ctypes.c_int, [_comm_t, _P(ctypes.c_int), _P(ctypes.c_char_p)]),
    "asynctpCommRejectCall": (ctypes.c_int, [_comm_t, ctypes.c_char_p]),
    "asynctpFusedAllGatherMatmul": (
        ctypes.c_int,
        [_comm_t, _P(Matrix), _P(Matrix), _P(Matrix), _P(Matrix), _P(Options), _P(RunInfo)],
    ),
    "asynctpFusedMatmulReduceScatter": (
        ctypes.c_int,
        [_comm_t, _P(Matrix), _P(Matrix), _P(Matrix), _P(Options), _P(RunInfo)],
    ),
    "asynctpPlanFusedAllGatherMatmul": (
        ctypes.c_int,
        [_comm_t, _P(Matrix), _P(Matrix), _P(Matrix), _P(Matrix), _P(Options), _P(RunInfo)],
    ),
    "asynctpPlanFusedMatmulReduceScatter": (
        ctypes.c_int,
        [_comm_t, _P(Matrix), _P(Matrix), _P(Matrix), _P(Options), _P(RunInfo)],
    ),
    "asynctpSynchronize": (ctypes.c_int, [_comm_t]),
}

_lock = threading.Lock()
_lib = None


def library_path():
    """Where the shared library is loaded from."""
    path = os.environ.get("ASYNCTP_LIBRARY")
    if path:
        if not os.path.isfile(path):
            raise OSError(f"ASYNCTP_LIBRARY={path}: no such file (a path to libasynctp_c.so)")
        return path
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libasynctp_c.so")
    if not os.path.isfile(path):
        raise OSError(
            f"asynctp: no C library at {path}; install the package with `pip install .` from "
            "the repository, or set ASYNCTP_LIBRARY to a built libasynctp_c.so"
        )
    return path


def lib():
    """The loaded library, its signatures declared (loaded once)."""
    global _lib
    if _lib is not None:  # every op call asks: no lock once loaded
        return _lib
    with _lock:
        if _lib is None:
            loaded = ctypes.CDLL(library_path(), mode=ctypes.RTLD_LOCAL)
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(loaded, name)
                fn.restype = restype
                fn.argtypes = argtypes
            version = loaded.asynctpGetVersion()
            if version != API_VERSION:
                raise OSError(
                    f"asynctp: {library_path()} has C ABI version {version}, this package "
                    f"needs {API_VERSION}; rebuild the library or point ASYNCTP_LIBRARY at a "
                    "matching one"
                )
            _lib = loaded
        return _lib


def check(result):
    """Raises the library's last error for a failed status code."""
    if result != 0:
        message = lib().asynctpGetLastError().decode("utf-8", "replace")
        raise error_for(RESULT_NAMES.get(result, "internal"), message)


def has_nccl():
    return bool(lib().asynctpHasNccl())


class Communicator:
    """One rank's communicator handle; freed by close() or when collected."""

    def __init__(self, handle):
        self._handle = ctypes.c_void_p(handle)
        self._lib = lib()  # kept for close() at interpreter exit
        rank, world, kind = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.c_char_p()
        check(self._lib.asynctpCommRank(self._handle, ctypes.byref(rank)))
        check(self._lib.asynctpCommWorldSize(self._handle, ctypes.byref(world)))
        check(self._lib.asynctpCommBackend(self._handle, ctypes.byref(kind), ctypes.byref(name)))
        self.rank, self.world_size, self.device_kind = rank.value, world.value, kind.value
        self.backend = name.value.decode()

    @property
    def handle(self):
        if not self._handle:
            raise ValueError("asynctp communicator: used after close()")
        return self._handle

    def close(self):
        if self._handle:
            handle, self._handle = self._handle, ctypes.c_void_p()
            self._lib.asynctpCommDestroy(handle)

    def __del__(self):
        self.close()

    def reject_call(self, message):
        """Collective, in the place of an op call this rank cannot make: the
        peers' call fails naming this rank and `message`."""
        check(lib().asynctpCommRejectCall(self.handle, message.encode()))

    def synchronize(self):
        check(lib().asynctpSynchronize(self.handle))


def cpu_unique_id():
    uid = UniqueId()
    check(lib().asynctpCpuGetUniqueId(ctypes.byref(uid)))
    return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)  # NULs included


def nccl_unique_id():
    uid = UniqueId()
    check(lib().asynctpNcclGetUniqueId(ctypes.byref(uid)))
    return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)


def _unique_id(raw):
    if len(raw) != UNIQUE_ID_BYTES:
        raise ValueError(f"unique id: must be {UNIQUE_ID_BYTES} bytes, got {len(raw)}")
    uid = UniqueId()
    ctypes.memmove(ctypes.addressof(uid), raw, UNIQUE_ID_BYTES)
    return uid


def cpu_comm_init_rank(world_size, unique_id, rank, gemm_workers=0, setup_timeout_ms=0):
    handle = ctypes.c_void_p()
    uid = _unique_id(unique_id)
    check(
        lib().asynctpCpuCommInitRank(
            ctypes.byref(handle), world_size, ctypes.byref(uid), rank, gemm_workers,
            setup_timeout_ms,
        )
    )
    return Communicator(handle.value)


def nccl_comm_init_rank(world_size, unique_id, rank, device):
    handle = ctypes.c_void_p()
    uid = _unique_id(unique_id)
    check(
        lib().asynctpNcclCommInitRank(
            ctypes.byref(handle), world_size, ctypes.byref(uid), rank, device
        )
    )
    return Communicator(handle.value)


_options_cache = {}


def options(algorithm="", wait_timeout_ms=0, stream=None):
    """The Options of a call, shared between the calls that ask for the same
    ones (the library only reads them): the op's hot path builds none."""
    key = (algorithm, wait_timeout_ms, stream)
    opts = _options_cache.get(key)
    if opts is None:
        if algorithm not in ALGORITHM_SETTINGS:
            raise ValueError(
                f"algorithm: must be one of 'auto', 'tuned', 'native', 'pipelined', 'decomposed' "
                f"(or '' for ASYNCTP_ALGO), got {algorithm!r}"
            )
        code, tune = ALGORITHM_SETTINGS[algorithm]
        opts = Options(code, tune, int(wait_timeout_ms), 0, 0, stream)
        if len(_options_cache) >= 256:  # streams come and go: keep it small
            _options_cache.clear()
        _options_cache[key] = opts
    return opts


def run_info(info):
    """(algorithm, reason) of a RunInfo the library filled."""
    return ALGORITHM_NAMES.get(info.algorithm, "?"), info.reason.decode("utf-8", "replace")


def call(fn, comm, *args):
    """An op or plan entry point on `args` (Matrix structs, None for an
    absent one, then the Options; ctypes passes them by reference): the
    RunInfo of what it chose, decoded by run_info() when someone asks."""
    info = RunInfo()
    result = fn(comm.handle, *args, info)
    if result != 0:
        check(result)
    return info


def plan_all_gather_matmul(comm, a_shard, b, c_out, a_gathered_out, opts):
    return run_info(call(lib().asynctpPlanFusedAllGatherMatmul, comm, a_shard, b, c_out,
                         a_gathered_out, opts))


def plan_matmul_reduce_scatter(comm, a, b, out, opts):
    return run_info(call(lib().asynctpPlanFusedMatmulReduceScatter, comm, a, b, out, opts))
