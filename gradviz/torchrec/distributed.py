"""Observe torch.distributed and DistributedDataParallel for a recording of torch's engine.

One rank, one trace: this runs in each rank's process beside the TorchRecorder and emits the
distributed kinds of ``gradviz.trace.events`` through a narrow interface (``Sink``): an emit
callable, a leaf-id callable and the recorder's clock. Everything is a public mechanism of torch's,
installed on ``start()`` and taken off on ``stop()``:

- ``torch.distributed.init_process_group`` is wrapped: when it returns, one barrier of all ranks
  on the group's store, and this rank's clock reading as it returns (``dist_init``), lines the
  ranks' times up.
- the collectives of ``torch.distributed`` (``all_reduce``, ``all_gather``, ``broadcast``,
  ``barrier``...) are wrapped: begin, end (an async op's end when its work's future completes), and
  a number per process group, counted in call order, which is the same on every rank because every
  rank must call a group's collectives in the same order.
- a DDP module, when made, gets a forward pre-hook (iterations), a post-accumulate-grad hook on
  each parameter (which parameters got a gradient: the unused-parameter error), and a comm hook:
  the user's own, wrapped, when they register one; else, at the first forward, a stand-in for
  DDP's built-in allreduce. DDP allows one comm hook, and a C++ built-in one
  (``_register_builtin_comm_hook``) cannot be wrapped: then buckets go unrecorded.

The stand-in does what DDP's reducer does without a hook: the bucket holds the gradients times
1/world_size (the reducer scales as it copies; the stand-in scales the copied bucket, the same
multiplication), all_reduce SUM, and the bucket's result is the reduced buffer; so the program's
numbers do not change (tests/distributed/test_torchrec_distributed.py checks it bit for bit).
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from gradviz.torchrec.adapters import dtype_name
from gradviz.torchrec.lines import user_frame, where
from gradviz.trace import events as ev
from gradviz.trace.ranks import header_fields as _env_header


@dataclass(frozen=True)
class Sink:
    """What the observer needs of a recorder."""

    emit: Callable[..., None]  # emit(EventClass, **fields); safe from any thread
    leaf: Callable[[torch.Tensor, str], int]  # a leaf's tensor id (announced if new), given its name
    now: Callable[[], int]  # the recorder's clock: ns since the trace began


# The collectives wrapped, and which argument is the data they send (bytes, shape, dtype).
_COLLECTIVES: dict[str, str | None] = {
    "all_reduce": "tensor", "broadcast": "tensor", "reduce": "tensor", "barrier": None,
    "all_gather": "tensor", "all_gather_into_tensor": "input_tensor", "gather": "tensor",
    "scatter": "tensor", "reduce_scatter": "input_list", "reduce_scatter_tensor": "input",
    "all_to_all": "input_tensor_list", "all_to_all_single": "input", "all_reduce_coalesced": "tensors",
    "all_gather_object": None, "broadcast_object_list": None, "gather_object": None,
    "scatter_object_list": None,
}


def available() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch built without distributed
        return False
    return bool(dist.is_available())


def header_fields() -> dict[str, Any]:
    """trace_begin's rank fields: the launcher's environment, and the backend when a process group
    already exists (recording started inside a running job)."""
    out: dict[str, Any] = dict(_env_header())
    if available():
        import torch.distributed as dist

        if dist.is_initialized():
            out["backend"] = str(dist.get_backend())
            out.setdefault("rank", dist.get_rank())
            out.setdefault("world_size", dist.get_world_size())
    return out


def _group_name(dist: Any, group: Any) -> tuple[str, int]:
    pg = group if group is not None else dist.group.WORLD
    try:
        name = str(pg.group_name)
    except Exception:  # noqa: BLE001 - a group object of another kind: its position is stable too
        name = f"group@{id(pg):x}"
    try:
        size = int(dist.get_world_size(pg))
    except Exception:  # noqa: BLE001 - a group this rank is not in
        size = -1
    return name, size


def _tensors(v: Any) -> list[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for t in v if isinstance(t, torch.Tensor)]
    return []


def _qualname(fn: Any) -> str:
    f = getattr(fn, "func", fn)  # functools.partial
    mod = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", None) or type(f).__name__
    return f"{mod}.{name}" if mod else name


class _Ddp:
    """What the observer keeps of one DDP module: no strong reference to it or its parameters."""

    __slots__ = ("id", "ref", "index", "iteration", "ready", "buckets", "handles", "hooked", "builtin")

    def __init__(self, ddp_id: int, ddp: Any, index: dict[int, int]):
        self.id = ddp_id
        self.ref = weakref.ref(ddp)
        self.index = index  # id(parameter) -> its DDP index
        self.iteration = 0
        self.ready: set[int] = set()  # parameter indices given a gradient in this iteration
        self.buckets: set[int] = set()  # buckets handed to the comm hook in this iteration
        self.handles: list[Any] = []
        self.hooked = False  # a comm hook (the user's, wrapped, or the stand-in) is registered
        self.builtin = False  # the user registered a C++ built-in hook: buckets are not seen


class DistObserver:
    """Wraps torch.distributed's entry points while a recording runs (``start``/``stop``)."""

    def __init__(self, sink: Sink):
        self.sink = sink
        # fields below: _lock protects _numbers and _ddps (collectives may come from several threads)
        self._lock = threading.Lock()
        self._numbers: dict[str, int] = {}  # group name -> collectives called on it so far
        self._ddps: list[_Ddp] = []
        self._saved: list[tuple[Any, str, Any]] = []  # (owner, attribute, original)
        self._tls = threading.local()  # .bucket: (ddp id, bucket index) while a comm hook runs
        self._inits = 0  # init_process_group calls seen (each rank makes the same ones)
        self._on = False

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if not available():
            return
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        self._on = True
        self._patch(dist, "init_process_group", self._wrap_init(dist.init_process_group))
        for name in _COLLECTIVES:
            fn = getattr(dist, name, None)
            if fn is not None:
                self._patch(dist, name, self._wrap_collective(name, fn))
        self._patch(DDP, "__init__", self._wrap_ddp_init(DDP.__init__))
        self._patch(DDP, "register_comm_hook", self._wrap_register(DDP.register_comm_hook))
        self._patch(DDP, "_register_builtin_comm_hook", self._wrap_builtin(DDP._register_builtin_comm_hook))
        if dist.is_initialized():  # recording began inside a running job: no barrier (ranks may not all be here)
            self._dist_init(dist, clock=None)

    def forget_in_child(self) -> None:
        """In a forked child: unwrap, emitting nothing (the recording is the parent's)."""
        self._on = False
        self._lock = threading.Lock()
        for owner, attr, orig in reversed(self._saved):
            setattr(owner, attr, orig)
        self._saved.clear()
        self._ddps = []

    def stop(self) -> None:
        """Unwrap, close the iteration of each DDP module, take the hooks off."""
        if not self._on:
            return
        self._on = False
        for owner, attr, orig in reversed(self._saved):
            setattr(owner, attr, orig)
        self._saved.clear()
        with self._lock:
            ddps, self._ddps = self._ddps, []
        for d in ddps:
            self._close_iteration(d)
            for h in d.handles:
                h.remove()
            d.handles.clear()

    def _patch(self, owner: Any, attr: str, new: Any) -> None:
        self._saved.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, new)

    # -- process group and clocks ---------------------------------------------------------------
    def _dist_init(self, dist: Any, clock: int | None) -> None:
        self.sink.emit(ev.DistInit, backend=str(dist.get_backend()), rank=dist.get_rank(),
                       world_size=dist.get_world_size(), clock=clock,
                       wall=None if clock is None else time.time_ns())

    def _wrap_init(self, fn: Any) -> Any:
        obs = self

        @functools.wraps(fn)
        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            if obs._on:
                import torch.distributed as dist

                obs._inits += 1
                clock = obs.sink.now() if _store_barrier(dist, obs._inits) else None
                obs._dist_init(dist, clock=clock)
            return out

        return init_process_group

    # -- collectives ----------------------------------------------------------------------------
    def _wrap_collective(self, name: str, fn: Any) -> Any:
        obs = self
        try:
            sig: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):  # pragma: no cover
            sig = None
        data_arg = _COLLECTIVES[name]

        @functools.wraps(fn)
        def collective(*args: Any, **kwargs: Any) -> Any:
            if not obs._on or sig is None:
                return fn(*args, **kwargs)
            try:
                b = sig.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)  # torch's own error
            return obs._collective(name, fn, b, data_arg)

        return collective

    def _collective(self, name: str, fn: Any, b: inspect.BoundArguments, data_arg: str | None) -> Any:
        import torch.distributed as dist

        a = b.arguments
        group, size = _group_name(dist, a.get("group"))
        async_op = bool(a.get("async_op", False))
        data = _tensors(a.get(data_arg)) if data_arg else []
        first = data[0] if data else None
        with self._lock:
            number = self._numbers.get(group, 0) + 1
            self._numbers[group] = number
        where = getattr(self._tls, "bucket", None)
        self.sink.emit(ev.CollectiveBegin, op=name, group=group, group_size=size, number=number,
                       shape=None if first is None else tuple(first.shape),
                       dtype=None if first is None else dtype_name(first.dtype),
                       bytes=sum(t.numel() * t.element_size() for t in data), async_op=async_op,
                       ddp=None if where is None else where[0], bucket=None if where is None else where[1])
        try:
            work = fn(*b.args, **b.kwargs)
        except BaseException as e:
            self.sink.emit(ev.CollectiveEnd, op=name, group=group, number=number, status="error",
                           error=f"{type(e).__name__}: {e}")
            raise
        if async_op and work is not None:
            try:
                fut = work.get_future()
            except Exception:  # noqa: BLE001 - a backend without futures: ends when it is waited on, unseen
                fut = None
            if fut is not None:
                fut.add_done_callback(functools.partial(self._collective_done, name, group, number))
                return work
        self.sink.emit(ev.CollectiveEnd, op=name, group=group, number=number, status="ok")
        return work

    def _collective_done(self, name: str, group: str, number: int, fut: Any) -> None:
        err = _future_error(fut)
        if self._on:
            self.sink.emit(ev.CollectiveEnd, op=name, group=group, number=number,
                           status="ok" if err is None else "error", error=err)

    # -- DDP --------------------------------------------------------------------------------------
    def _wrap_ddp_init(self, fn: Any) -> Any:
        obs = self

        @functools.wraps(fn)
        def __init__(ddp: Any, *args: Any, **kwargs: Any) -> None:
            fn(ddp, *args, **kwargs)
            if obs._on and getattr(ddp, "_gradviz_ddp", None) is None:  # a subclass's super().__init__ once
                obs._ddp_made(ddp)

        return __init__

    def _ddp_made(self, ddp: Any) -> None:
        import torch.distributed as dist

        ignored = set(getattr(ddp, "parameters_to_ignore", ()) or ())
        named = [(n, p) for n, p in ddp.module.named_parameters() if p.requires_grad and n not in ignored]
        with self._lock:
            d = _Ddp(len(self._ddps) + 1, ddp, {id(p): i for i, (_, p) in enumerate(named)})
            self._ddps.append(d)
        ddp._gradviz_ddp = d.id
        tensors = tuple(self.sink.leaf(p, n) for n, p in named)
        group, _ = _group_name(dist, getattr(ddp, "process_group", None))
        self.sink.emit(ev.DdpInit, ddp=d.id, params=tuple(n for n, _ in named), tensors=tensors,
                       bucket_cap=int(getattr(ddp, "bucket_bytes_cap", 0) or 0),
                       find_unused=bool(getattr(ddp, "find_unused_parameters", False)), group=group)
        d.handles.append(ddp.register_forward_pre_hook(functools.partial(self._forward, d)))
        for i, (_, p) in enumerate(named):
            d.handles.append(p.register_post_accumulate_grad_hook(functools.partial(_mark, d.ready, i)))

    def _forward(self, d: _Ddp, module: Any, args: Any) -> None:
        if not self._on:
            return
        if not d.hooked and not d.builtin:
            # DDP allows one comm hook: the stand-in goes on at the first forward, so that a user
            # registering theirs after construction gets theirs wrapped instead
            d.hooked = True
            self._saved_register(module, None, _allreduce_mean)
        self._close_iteration(d)
        d.iteration += 1
        self.sink.emit(ev.DdpForward, ddp=d.id, iteration=d.iteration, source=where(user_frame(2)))

    def _close_iteration(self, d: _Ddp) -> None:
        if d.iteration == 0:
            return
        ready, buckets = tuple(sorted(d.ready)), tuple(sorted(d.buckets))
        d.ready.clear()
        d.buckets.clear()
        self.sink.emit(ev.DdpGrads, ddp=d.id, iteration=d.iteration, ready=ready, buckets=buckets)

    def _saved_register(self, ddp: Any, state: Any, hook: Any) -> Any:
        from torch.nn.parallel import DistributedDataParallel as DDP

        orig = next((o for owner, attr, o in self._saved if owner is DDP and attr == "register_comm_hook"),
                    DDP.register_comm_hook)
        return orig(ddp, state, self._wrap_hook(ddp, hook))

    def _wrap_register(self, fn: Any) -> Any:
        obs = self

        @functools.wraps(fn)
        def register_comm_hook(ddp: Any, state: object, hook: Callable) -> None:
            d = obs._find(ddp)
            if not obs._on or d is None or d.hooked:
                return fn(ddp, state, hook)  # torch says what is wrong (a second hook...)
            fn(ddp, state, obs._wrap_hook(ddp, hook))
            d.hooked = True

        return register_comm_hook

    def _wrap_builtin(self, fn: Any) -> Any:
        obs = self

        @functools.wraps(fn)
        def _register_builtin_comm_hook(ddp: Any, comm_hook_type: Any) -> None:
            out = fn(ddp, comm_hook_type)
            d = obs._find(ddp)
            if d is not None:
                d.builtin = True
            return out

        return _register_builtin_comm_hook

    def _find(self, ddp: Any) -> _Ddp | None:
        i = getattr(ddp, "_gradviz_ddp", None)
        with self._lock:
            return next((d for d in self._ddps if d.id == i and d.ref() is ddp), None)

    def _wrap_hook(self, ddp: Any, hook: Callable) -> Callable:
        obs = self
        d = self._find(ddp)
        name = "allreduce (DDP's default)" if hook is _allreduce_mean else _qualname(hook)

        def comm_hook(state: object, bucket: Any) -> torch.futures.Future[torch.Tensor]:
            if not obs._on or d is None:
                return hook(state, bucket)
            index = bucket.index()
            buf = bucket.buffer()
            params = tuple(sorted(d.index.get(id(p), -1) for p in bucket.parameters()))
            d.buckets.add(index)
            iteration = d.iteration
            obs.sink.emit(ev.BucketReady, ddp=d.id, iteration=iteration, bucket=index, params=params,
                          numel=buf.numel(), bytes=buf.numel() * buf.element_size(),
                          dtype=dtype_name(buf.dtype), last=bool(bucket.is_last()), hook=name)
            obs._tls.bucket = (d.id, index)
            try:
                fut = hook(state, bucket)
            finally:
                obs._tls.bucket = None
            fut.add_done_callback(functools.partial(obs._bucket_done, d.id, iteration, index))
            return fut

        comm_hook.__name__ = getattr(hook, "__name__", "comm_hook")
        comm_hook.__qualname__ = getattr(hook, "__qualname__", comm_hook.__name__)
        comm_hook.__wrapped__ = hook  # type: ignore[attr-defined]
        return comm_hook

    def _bucket_done(self, ddp_id: int, iteration: int, index: int, fut: Any) -> None:
        if self._on:
            self.sink.emit(ev.BucketDone, ddp=ddp_id, iteration=iteration, bucket=index,
                           status="ok" if _future_error(fut) is None else "error")


def _store_barrier(dist: Any, generation: int) -> bool:
    """Wait for every rank on the default group's key-value store; True when all were there.

    Every rank made the default group, so every rank comes here; the moment the last one arrives
    is (nearly) the same instant on all of them. The store, not a collective: a barrier of the
    group's backend would be a collective the program never made (NCCL's would pick a GPU before
    the program chose its own), where the store touches no device and no backend."""
    try:
        store = dist.distributed_c10d._get_default_store()
        rank, world = dist.get_rank(), dist.get_world_size()
        store.set(f"gradviz/clock/{generation}/{rank}", "1")
        store.wait([f"gradviz/clock/{generation}/{r}" for r in range(world)])
    except Exception:  # noqa: BLE001 - no store to share (a custom group): times are not aligned
        return False
    return True


def _mark(ready: set[int], i: int, _param: torch.Tensor) -> None:
    ready.add(i)


def _future_error(fut: Any) -> str | None:
    try:
        fut.value()
    except BaseException as e:  # noqa: BLE001 - the future's failure is what is recorded
        return f"{type(e).__name__}: {e}"
    return None


def _allreduce_mean(process_group, bucket):  # type: ignore[no-untyped-def]
    """DDP's reduction without a comm hook: gradients times 1/world_size, summed over the ranks.
    (No annotations: DDP checks a hook's, and this module's are strings.)"""
    import torch.distributed as dist

    group = process_group if process_group is not None else dist.group.WORLD
    buf = bucket.buffer()
    buf.mul_(1.0 / dist.get_world_size(group))
    return dist.all_reduce(buf, group=group, async_op=True).get_future().then(lambda f: f.value()[0])
