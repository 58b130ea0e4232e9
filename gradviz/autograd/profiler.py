"""torch.autograd.profiler: profile, record_function, and the event lists they report.

gradviz has no dispatcher to hook, so while a profile is active it wraps the ops a program can
call: the Tensor methods and operators, the ``gradviz.*`` functions and ``gradviz.nn.functional``.
Each call is one event named as torch names the aten op (``z / x`` is ``aten::div``), timed on the
CPU; an op called inside another (``F.linear`` calling a method) is its child, so self and total
times split as torch's do. Calls that do not go through those names (gradviz's own internals) are
not seen: the table has torch's columns and the program's own ops, not every aten kernel torch
would list.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]

# Operators named as the aten op torch's dispatcher runs for them; dunders not here (repr, len,
# bool, ...) are not ops and are left unwrapped.
_DUNDER_OPS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__rtruediv__": "div", "__itruediv__": "div_", "__pow__": "pow", "__rpow__": "pow",
    "__matmul__": "matmul", "__rmatmul__": "matmul", "__neg__": "neg", "__abs__": "abs",
    "__getitem__": "index", "__setitem__": "index_put_", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt",
    "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__invert__": "bitwise_not", "__and__": "bitwise_and",
    "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__floordiv__": "floor_divide", "__mod__": "remainder",
}
# Tensor methods that read metadata or drive autograd rather than run an op.
_NOT_OPS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "data_ptr", "element_size",
    "is_floating_point", "is_complex", "type", "backward", "register_hook", "register_post_accumulate_grad_hook",
    "retain_grad", "requires_grad_", "tolist", "numpy", "storage_offset", "untyped_storage", "get_device",
})

_US_IN_SECOND = 1000.0 * 1000.0
_US_IN_MS = 1000.0


def _format_time(time_us: float) -> str:
    if time_us >= _US_IN_SECOND:
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if time_us >= _US_IN_MS:
        return f"{time_us / _US_IN_MS:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_time_us: float) -> str:
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


class FunctionEvent:
    """One op call (or record_function block): its name, thread, start and end in microseconds."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float = 0.0,
                 input_shapes: list | None = None, is_user_annotation: bool = False) -> None:
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes or []
        self.is_user_annotation = is_user_annotation
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time_total)} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} thread={self.thread}>")


class FunctionEventAvg:
    """The events of one key added up: count, total and self CPU time."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes: list | None = None
        self.is_user_annotation = False

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.is_user_annotation = other.is_user_annotation
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} count={self.count}>")


class EventList(list):
    """A list of events (or of their averages) that prints as torch's table."""

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        groups: dict[Any, FunctionEventAvg] = {}
        for evt in self:
            key = (evt.key, str(evt.input_shapes)) if group_by_input_shapes else evt.key
            groups.setdefault(key, FunctionEventAvg()).add(evt)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(evt.self_cpu_time_total for evt in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls."""
        events = list(self)
        if not events:
            return ""
        if sort_by is not None:
            events.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if top_level_events_only:
            events = [e for e in events if getattr(e, "cpu_parent", None) is None]
        sum_self = sum(e.self_cpu_time_total for e in self)
        name_width = max(len(e.key) for e in events) + 4
        if max_name_column_width is not None:
            name_width = min(name_width, max_name_column_width)
        widths = [name_width] + [12] * 6
        titles = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        row = "".join(f"{{: >{w}}}  " for w in widths)
        line = "".join("-" * w + "  " for w in widths)
        out = []
        if header is not None:
            out += ["=" * len(line), header]
        out += [line, row.format(*titles), line]
        for evt in events[:row_limit] if row_limit > 0 else events:
            name = evt.key
            if len(name) >= name_width - 3:
                name = name[: name_width - 3 - 3] + "..."
            out.append(row.format(
                name, _format_time_share(evt.self_cpu_time_total, sum_self), _format_time(evt.self_cpu_time_total),
                _format_time_share(evt.cpu_time_total, sum_self), _format_time(evt.cpu_time_total),
                _format_time(evt.cpu_time), evt.count,
            ))
        out += [line, f"Self CPU time total: {_format_time(sum_self)}", ""]
        return "\n".join(out)

    def export_chrome_trace(self, path: str) -> None:
        """The events as Chrome trace 'X' events (chrome://tracing, ui.perfetto.dev)."""
        trace = [{"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.cpu_time_total, "pid": 0,
                  "tid": e.thread, "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                  "args": {}} for e in self if isinstance(e, FunctionEvent)]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace}, f)


# -- recording: the active profiles, and the wrappers that feed them -----------------------------

_lock = threading.Lock()
_active: list[profile] = []
_patched: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) to restore
_local = threading.local()  # .stack: the open events of this thread


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0


def _open(name: str, args: tuple = (), user: bool = False) -> FunctionEvent | None:
    profs = _active
    if not profs:
        return None
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    shapes = [list(a.shape) if hasattr(a, "_data") else [] for a in args] if profs[-1].record_shapes else []
    evt = FunctionEvent(0, name, threading.get_ident(), _now_us(), input_shapes=shapes, is_user_annotation=user)
    if stack:
        evt.cpu_parent = stack[-1]
        stack[-1].cpu_children.append(evt)
    stack.append(evt)
    return evt


def _close(evt: FunctionEvent) -> None:
    evt.end_us = _now_us()
    stack = _local.stack
    if stack and stack[-1] is evt:
        stack.pop()
    for prof in list(_active):
        prof._add(evt)


def _wrap(fn: Callable, name: str) -> Callable:
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        evt = _open(name, args)
        if evt is None:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            _close(evt)

    op.__gv_profiled__ = True  # type: ignore[attr-defined]
    return op


def _targets() -> Iterator[tuple[Any, str, Callable, str]]:
    """(owner, attribute, function, aten name) of each op a program can call."""
    import gradviz
    from gradviz.nn import functional as nnf
    from gradviz.tensor import Tensor

    for attr, value in list(vars(Tensor).items()):
        if not isinstance(value, types.FunctionType) or attr in _NOT_OPS:
            continue
        if attr.startswith("__"):
            if attr in _DUNDER_OPS:
                yield Tensor, attr, value, _DUNDER_OPS[attr]
        elif not attr.startswith("_"):
            yield Tensor, attr, value, attr
    for owner in (gradviz, nnf):
        for attr, value in list(vars(owner).items()):
            if (isinstance(value, types.FunctionType) and not attr.startswith("_")
                    and (value.__module__ or "").startswith(("gradviz.ops", "gradviz.nn"))):
                yield owner, attr, value, attr


def _install() -> None:
    for owner, attr, fn, name in _targets():
        _patched.append((owner, attr, fn))
        setattr(owner, attr, _wrap(fn, f"aten::{name}"))


def _uninstall() -> None:
    while _patched:
        owner, attr, fn = _patched.pop()
        setattr(owner, attr, fn)


class profile:
    """``with torch.autograd.profiler.profile() as prof:`` records the ops run inside the block;
    ``prof.key_averages().table(sort_by='self_cpu_time_total')`` prints them as torch does.
    CUDA, memory, FLOP and stack options are accepted and record nothing more (gradviz times the
    host side of each op only)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        self.enabled = enabled
        self.use_device = use_device or ("cuda" if use_cuda else None)
        self.record_shapes = record_shapes
        self.entered = False
        self._events: list[FunctionEvent] = []
        self._function_events: EventList | None = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        with _lock:
            if not _active:
                _install()
            _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.enabled:
            return
        with _lock:
            _active.remove(self)
            if not _active:
                _uninstall()
        for i, evt in enumerate(sorted(self._events, key=lambda e: e.start_us)):
            evt.id = i + 1
        self._function_events = EventList(sorted(self._events, key=lambda e: e.start_us))

    def _add(self, evt: FunctionEvent) -> None:
        self._events.append(evt)

    def _check_finish(self) -> EventList:
        if not self.enabled:
            # torch never makes the list when disabled: the attribute is missing
            raise AttributeError("'profile' object has no attribute '_function_events'")
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._function_events

    @property
    def function_events(self) -> EventList:
        return self._check_finish()

    def events(self) -> EventList:
        return self._check_finish()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._check_finish().key_averages(group_by_input_shape)

    def total_average(self) -> FunctionEventAvg:
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._check_finish().self_cpu_time_total

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._check_finish().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._check_finish().export_chrome_trace(path)

    def __str__(self) -> str:
        return self.table()


class record_function:
    """A labelled block (or decorated function) in the profile, its ops as its children."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._evt: FunctionEvent | None = None

    def __enter__(self) -> record_function:
        self._evt = _open(self.name, user=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._evt is not None:
            _close(self._evt)
            self._evt = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapped
