"""The asynctp communicator of a torch.distributed ProcessGroup.

Made on a group's first use with tensors of a device kind, collectively (the
group's rank 0 makes the unique id and broadcasts it through the group), then
cached: CUDA tensors get the NCCL transport (one rank per GPU), CPU tensors
the CPU multi-process transport (one rank per process of one host).
Destroyed with the group, or at exit.
"""

import atexit
import threading
import weakref

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from asynctp import _capi
from asynctp._errors import Error, InvalidArgumentError

_lock = threading.RLock()
_comms = {}  # (group name, CUDA device index or -1 for the CPU) -> _capi.Communicator


def resolve_group(group):
    """The ProcessGroup behind a group or its name ("group_name" as
    torch.ops.symm_mem takes it); None is the default group."""
    if group is None:
        if not dist.is_initialized():
            raise InvalidArgumentError(
                "group: torch.distributed is not initialized (call init_process_group first)"
            )
        return dist.group.WORLD
    if isinstance(group, str):
        try:
            return c10d._resolve_process_group(group)
        except Exception as e:  # torch raises several kinds for an unknown name
            raise InvalidArgumentError(f"group: no process group is named {group!r} ({e})") from e
    if isinstance(group, dist.ProcessGroup):
        return group
    raise InvalidArgumentError(
        f"group: must be a torch.distributed ProcessGroup or its name, got {type(group).__name__}"
    )


def group_name(group):
    return resolve_group(group).group_name


def group_size(name):
    return resolve_group(name).size()


def _exchange_unique_id(pg, make_id):
    """Rank 0 of `pg` makes an id and every rank receives it, or rank 0's
    failure to make one, which then raises on every rank."""
    payload = [None]
    if pg.rank() == 0:
        try:
            payload[0] = ("id", make_id())
        except Error as e:
            payload[0] = ("error", e)
    dist.broadcast_object_list(payload, src=dist.get_global_rank(pg, 0), group=pg)
    kind, value = payload[0]
    if kind == "error":
        raise value
    return value


def _make(pg, device):
    rank, world = pg.rank(), pg.size()
    if device.type == "cuda":
        unique_id = _exchange_unique_id(pg, _capi.nccl_unique_id)
        return _capi.nccl_comm_init_rank(world, unique_id, rank, device.index)
    unique_id = _exchange_unique_id(pg, _capi.cpu_unique_id)
    return _capi.cpu_comm_init_rank(world, unique_id, rank)


def comm_for(name, device):
    """The communicator of group `name` for tensors on `device` (collective
    on first use)."""
    if device.type == "cuda":
        index = torch.cuda.current_device() if device.index is None else device.index
    else:
        index = -1
    return _comm_at(name, index, device)


def comm_for_tensor(name, t):
    """comm_for(name, t.device), on every op call: a lookup without the
    lock (a dict read is atomic) and without making a torch.device."""
    comm = _comms.get((name, t.get_device()))
    return comm if comm is not None else _comm_at(name, t.get_device(), t.device)


def _comm_at(name, index, device):
    key = (name, index)  # index: the CUDA device's, -1 on the CPU
    with _lock:
        comm = _comms.get(key)
        if comm is None:
            pg = resolve_group(name)
            comm = _make(pg, device if index < 0 else torch.device("cuda", index))
            _comms[key] = comm
            _destroy_with(pg, key)
        return comm


def _destroy_with(pg, key):
    try:
        weakref.finalize(pg, destroy_key, key)
    except TypeError:
        pass  # a group that takes no weak references: destroyed at exit


def destroy_key(key):
    with _lock:
        comm = _comms.pop(key, None)
    if comm is not None:
        comm.close()


def destroy(group=None):
    """Frees the asynctp communicators of `group` (all groups when None).
    Local; the next call on the group makes new ones (collectively)."""
    name = None if group is None else (group if isinstance(group, str) else group.group_name)
    with _lock:
        keys = [k for k in _comms if name is None or k[0] == name]
    for key in keys:
        destroy_key(key)


atexit.register(destroy)
