"""The forward side of a real-torch recording: what ``gradviz why`` reasons over, in the trace's
one vocabulary (gradviz.trace.events: forward_op, version_bump, grad_mode, grad_reset, detach,
backward_call, tensor_at_end).

A ``TorchFunctionMode`` (torch's public mechanism for seeing every torch call from Python) sees
each call the user's code makes, and each call torch's own Python code makes for it (an
optimizer's step, a grad-mode block's ``_set_grad_enabled``). What it sees is OBSERVED: the op,
its tensors, whether its result has a grad_fn, grad mode, the user's line, an in-place op's new
``_version``, ``.grad`` set to None, ``.detach()``/``.data``/``.item()``/``.numpy()``/
``torch.tensor(t)``, ``backward()``/``grad()`` calls. Tensors are known by a weak reference and an
id the recording gives them (a leaf keeps it when the graph walk announces it later); the node an
op made is not named in forward_op (the recorder numbers nodes when a backward walks them).

Cost: one Python call per torch call (and a finiteness check of each floating-point result, a sum)
while recording; ``TorchRecorder.forward = False`` turns the forward side off.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from gradviz._code_positions import frame_columns
from gradviz.torchrec import lines
from gradviz.torchrec.summaries import BUSY, busy, has_values
from gradviz.trace import events as ev
from gradviz.trace.recorder_forward import forward_default, grad_state, named_tensors

_DETACH = {"detach": "detach", "numpy": "numpy", "item": "item", "tolist": "tolist", "tensor": "tensor"}
_SET_GRAD = "_set_grad_enabled"
# (method-wrappers are made at each attribute access: compared with ==, not is)
_GRAD_SET = torch.Tensor.grad.__set__
_DATA_GET = torch.Tensor.data.__get__


def _tensors(args: Any, kwargs: Any) -> list[torch.Tensor]:
    """The tensors among a call's arguments (and in its lists/tuples, one level down)."""
    out = []
    for a in (*args, *(kwargs or {}).values()):
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(x for x in a if isinstance(x, torch.Tensor))
    return out


def _inplace(name: str, kwargs: Any) -> bool:
    """Whether a call writes a tensor: torch's in-place names (``add_``, nn.init's ``normal_``),
    ``a[k] = v``, and any call with ``out=``."""
    return name.endswith("_") and not name.endswith("__") or name == "__setitem__" \
        or kwargs is not None and kwargs.get("out") is not None


def _written(args: Any, kwargs: Any) -> list[torch.Tensor]:
    """The tensors an in-place call writes: ``out=``, else its first argument (``tensor=`` for
    nn.init's, which torch passes by keyword), or each of a list's (``_foreach_add_``)."""
    kw = kwargs or {}
    t = kw.get("out")
    if t is None:
        t = args[0] if args else kw.get("tensor", kw.get("input", kw.get("self")))
    return [x for x in (t if isinstance(t, (list, tuple)) else (t,)) if isinstance(x, torch.Tensor)]


def _version(t: torch.Tensor) -> int:
    try:
        return t._version
    except RuntimeError:  # an inference tensor tracks no version
        return -1


def _public_inplace(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_")


def _outer_inplace(user: Any) -> Any:
    """The outermost frame of torch's Python between the user's line and this call that is an
    in-place function (``zeros_`` in torch/nn/init.py, which nn.LayerNorm's init calls), or None:
    gradviz's engine names the same call."""
    f = sys._getframe(2)
    outer = None
    while f is not None and f is not user:
        if _public_inplace(f.f_code.co_name):
            outer = f
        f = f.f_back
    return outer


def _finite(t: torch.Tensor) -> bool | None:
    """Whether every element is finite (None: not floating point). A sum first: one pass, no
    mask, and finite for almost every finite tensor."""
    if not t.dtype.is_floating_point or not has_values(t):  # meta, fake, functorch's wrappers: no values
        return None
    d = t.detach()
    s = d.sum().item()
    if s - s == 0:
        return True
    return bool(torch.isfinite(d).all())


class ForwardMode(TorchFunctionMode):
    """Notes each torch call as forward-side events of ``rec`` (a TorchRecorder with ForwardSide)."""

    def __init__(self, rec: Any, source: Any = None):
        super().__init__()
        self.rec = rec
        # source: the line-noting mode (lines.SourceMode), called here in place of the op rather
        # than pushed below this mode: one dispatch of torch's to Python an op, not two. It
        # calls the op itself (from the user's line) and notes the nodes it made.
        self.call = source.__torch_function__ if source is not None else _call
        if source is not None:
            source.note_last = True  # its call's frame in lines.LAST, cleared here when the call returns

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        rec = self.rec
        if getattr(func, "_gradviz_entry", False):
            # the recorder's backward/grad wrapper dispatches to the modes once it made its task
            # (and reported the call): the original runs, as SourceMode does
            while getattr(func, "_gradviz_entry", False) and hasattr(func, "__wrapped__"):
                func = func.__wrapped__
            return func(*args, **(kwargs or {}))
        if busy() or rec._running:
            # the recorder's own ops, or a backward running (its hooks, a Function's backward, a
            # create_graph backward's ops): not the program's forward
            return self.call(func, types, args, kwargs)
        name = getattr(func, "__name__", "")
        if name == _SET_GRAD:
            rec._fwd_grad_mode(sys._getframe(1), bool(args[0]) if args else True)
            return self.call(func, types, args, kwargs)
        if name == "__set__" and func == _GRAD_SET:
            if args and args[0].grad is not None and (len(args) < 2 or args[1] is None):
                rec._fwd_emit(ev.GradReset, tensor=rec._fwd_id(args[0]), how="none", source=_where())
            return self.call(func, types, args, kwargs)
        if rec._fwd_pending:
            rec._fwd_flush(sys._getframe(1))
        last = lines.LAST
        if name == "__set__" or name == "__get__" and func != _DATA_GET:
            # an attribute read or write (an optimizer's p.grad): no event of its own (see _note),
            # but a read of a non-leaf's .grad, None whatever backward does (torch warns)
            try:
                out = self.call(func, types, args, kwargs)
            finally:
                last.op = None
            if out is None and func == lines.GRAD_GET and args:
                t = args[0]
                if t.grad_fn is not None and not t.retains_grad:
                    rec._fwd_emit(ev.NonLeafGradRead, tensor=rec._fwd_id(t), source=_where())
            return out
        written = _written(args, kwargs) if _inplace(name, kwargs) else None
        before = [_version(t) for t in written] if written else None
        last.op = None  # SourceMode, below, notes this call's frame there
        try:
            out = self.call(func, types, args, kwargs)
            flag = BUSY
            flag.on = True  # the mode's own torch calls (a finiteness check): neither mode notes them
            try:
                self._note(func, name, args, kwargs, out, written, before)
            finally:
                flag.on = False
        finally:
            last.op = None
        return out

    def _note(self, func: Any, name: str, args: Any, kwargs: Any, out: Any, written: list | None,
              before: list | None) -> None:
        rec = self.rec
        if rec._fwd_pending and threading.get_ident() in rec._fwd_pending:
            return  # a call inside an in-place function of torch's (_fwd_composite): that call is the step
        if name == "__get__" and func == _DATA_GET:
            name = "data"
        if name in _DETACH:
            src = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if src is not None and src.requires_grad:
                o = out if isinstance(out, torch.Tensor) else None
                rec._fwd_emit(ev.Detach, op=_DETACH.get(name, name), tensor=rec._fwd_id(src),
                              output=None if o is None else rec._fwd_id(o), source=_where_of(func))
            return
        if written is not None:
            user = lines.user_frame(1)
            entry = _outer_inplace(user)
            # a write inside an in-place function of torch's Python (nn.init.zeros_ calls zero_):
            # that call is the step, one bump once it is done, named as it is called, and what it
            # runs inside is not the program's forward
            if entry is not None and entry.f_code.co_name != name:
                if rec._fwd_composite(entry, user):
                    return
            changed = [t for t, v in zip(written, before or (), strict=False) if _version(t) != v]
            src = lines.where(user) if changed else None
            cols = frame_columns(user) if changed else None
            for t in changed:
                rec._fwd_emit(ev.VersionBump, tensor=rec._fwd_id(t), version=_version(t), op=name, source=src,
                              columns=cols)
        if name.startswith("__") and name not in ("__add__", "__mul__", "__sub__", "__truediv__", "__matmul__",
                                                   "__pow__", "__neg__", "__radd__", "__rmul__", "__rsub__",
                                                   "__rtruediv__", "__getitem__", "__iadd__", "__isub__",
                                                   "__imul__", "__itruediv__"):
            return  # __get__ of attributes, __repr__, __format__: not ops of the forward
        items = out if isinstance(out, (list, tuple)) else (out,)
        first = next((t for t in items if isinstance(t, torch.Tensor)), None)
        if first is None:
            return
        ins = _tensors(args, kwargs)
        enabled = torch.is_grad_enabled()
        if enabled:
            if first.grad_fn is None:
                return  # no graph made: nothing autograd will reason about
            mode = "grad"
        else:
            tainted = rec._fwd_tainted
            if not any(t.requires_grad or id(t) in tainted for t in ins):
                return
            tainted.add(id(first))
            mode = "inference" if torch.is_inference_mode_enabled() else "no_grad"
        src, cols = _site_of(func)
        rec._fwd_emit(ev.ForwardOp, op=name.strip("_") or name, inputs=tuple(rec._fwd_id(t) for t in ins),
                      output=rec._fwd_id(first), grad_fn=None, requires_grad=first.requires_grad, grad_mode=mode,
                      finite=_finite(first) if enabled else None, source=src, columns=cols)


def _call(func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    return func(*args, **(kwargs or {}))


def _where() -> str | None:
    return lines.where(lines.user_frame(1))


def _where_of(func: Any) -> str | None:
    """The user's line of the torch call ``func`` just made: SourceMode's, when it saw it."""
    return _site_of(func)[0]


def _site_of(func: Any) -> tuple[str | None, tuple[int, int] | None]:
    """The user's line of the torch call ``func`` just made and its columns on it: SourceMode's,
    when it saw it."""
    last = lines.LAST.op
    user = last[1] if last is not None and last[0] is func else lines.user_frame(1)
    return lines.where(user), frame_columns(user)


_GRAD_MODES = {"no_grad": "no_grad", "enable_grad": "enable_grad", "set_grad_enabled": "set_grad_enabled",
               "inference_mode": "inference_mode"}


class ForwardSide:
    """The forward side of TorchSource (which provides _emit_raw, _tid, _running, _known_leaf_id
    and _tensor_ids)."""

    forward = True  # record the forward side (set False before start() to leave it out)
    # (empty until _fwd_start gives each recording its own: only the mode, made there, adds to it)
    _fwd_pending: dict[int, list[Any]] = {}  # noqa: RUF012

    _emit_raw: Any
    _tid: Any
    _running: list[Any]
    _known_leaf_id: Any
    _tensor_ids: int

    def _fwd_start(self, source: Any = None) -> bool:
        """Push the forward side's mode, which calls ``source`` (a TorchFunctionMode not pushed)
        for each op; whether it did (if not, the caller pushes ``source`` itself)."""
        self._fwd_ids: dict[int, tuple[Any, int]] = {}  # id(tensor) -> (weakref, tensor id)
        self._fwd_tainted: set[int] = set()  # id() of tensors made in no_grad blocks from grad tensors
        self._fwd_mode: ForwardMode | None = None
        # per thread, an in-place function of torch's Python running (nn.init.orthogonal_): [its
        # frame, the tensor it writes, its name, the user's line, columns], reported once it is done
        self._fwd_pending: dict[int, list[Any]] = {}
        if self.forward and forward_default():
            self._fwd_mode = ForwardMode(self, source)
            self._fwd_mode.__enter__()
            return True
        return False

    def _fwd_done(self) -> None:
        """The recording stops: an in-place call still noted (_fwd_composite) was the last step."""
        for tid in list(self._fwd_pending):
            self._fwd_flush(None, tid)

    def _fwd_stop(self) -> None:
        self._fwd_pending.clear()
        if self._fwd_mode is not None:
            try:
                self._fwd_mode.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - a mode left mismatched by the script: ours is off anyway
                pass
            self._fwd_mode = None
        self._fwd_ids.clear()
        self._fwd_tainted.clear()

    def _fwd_emit(self, cls: type[ev.Event], **fields: Any) -> None:
        if self._fwd_pending:
            self._fwd_flush(None)
        # the forward runs on the user's threads: a thread first seen here is a caller
        self._emit_raw(cls, self._tid("caller"), **fields)

    def _fwd_composite(self, entry: Any, user: Any) -> bool:
        """A write inside ``entry``, an in-place function of torch's Python the user's line called:
        noted as that call's (True), unless what it writes first is not a tensor (False: the
        write is reported as itself)."""
        code = entry.f_code
        target = entry.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
        if not isinstance(target, torch.Tensor):
            return False
        self._fwd_pending[threading.get_ident()] = [entry, target, code.co_name, lines.where(user),
                                                    frame_columns(user)]
        return True

    def _fwd_flush(self, frame: Any, tid: int | None = None) -> None:
        """Report the in-place function _fwd_composite noted on this thread (``tid``: that one)
        once it is done: a call made from ``frame`` outside it (None: it is done)."""
        tid = threading.get_ident() if tid is None else tid
        p = self._fwd_pending.get(tid)
        if p is None:
            return
        f = frame
        while f is not None:
            if f is p[0]:
                return  # still inside it
            f = f.f_back
        del self._fwd_pending[tid]
        _, t, op, src, cols = p
        self._emit_raw(ev.VersionBump, self._tid("caller"), tensor=self._fwd_id(t), version=_version(t), op=op,
                       source=src, columns=cols)

    def _fwd_id(self, t: torch.Tensor) -> int:
        """The recording's id of any tensor: a leaf's, once announced, or one given now."""
        known = self._known_leaf_id(t)
        if known is not None:
            return known
        mine = self._fwd_ids.get(id(t))
        if mine is not None and mine[0]() is t:
            return mine[1]
        self._tensor_ids += 1
        tid = self._tensor_ids
        try:
            ref = weakref.ref(t, functools.partial(_forget, self._fwd_ids, id(t)))
        except TypeError:
            return tid
        self._fwd_ids[id(t)] = (ref, tid)
        return tid

    def _fwd_known(self, t: torch.Tensor) -> int | None:
        """The id the forward side gave ``t``, if any (the graph walk keeps it for the leaf)."""
        mine = getattr(self, "_fwd_ids", {}).get(id(t))
        return mine[1] if mine is not None and mine[0]() is t else None

    def _fwd_grad_mode(self, frame: Any, enabled: bool) -> None:
        """torch's grad-mode blocks call _set_grad_enabled from their __enter__/__exit__ (and
        set_grad_enabled's __init__): a block the user's own code opened is reported."""
        # the outermost frame of torch's grad_mode.py (no_grad.__enter__ calls set_grad_enabled's
        # __init__, which calls _set_grad_enabled)
        while frame is not None and frame.f_back is not None and \
                frame.f_back.f_code.co_filename == frame.f_code.co_filename:
            frame = frame.f_back
        code = frame.f_code if frame is not None else None
        if code is None:
            return
        owner = code.co_qualname.split(".")[0] if hasattr(code, "co_qualname") else ""
        mode = _GRAD_MODES.get(owner)
        user = frame.f_back
        if mode is None or user is None or lines.ours(user.f_code.co_filename):
            return
        enter = code.co_name in ("__enter__", "__init__")
        self._fwd_emit(ev.GradMode, mode=mode, enter=enter, enabled=enabled,
                       source=f"{user.f_code.co_filename}:{user.f_lineno}")

    def _fwd_call(self, accumulate: bool, outs: list[Any], inputs: list[Any], keep: bool) -> None:
        """backward()/grad() was called (the recorder's wrapper, before it begins the task)."""
        if self._fwd_mode is None or self._running:
            return
        self._fwd_emit(ev.BackwardCall, api="backward" if accumulate else "grad",
                       tensors=tuple(self._fwd_id(t) for t in outs if isinstance(t, torch.Tensor)),
                       inputs=tuple(self._fwd_id(t) for t in inputs if isinstance(t, torch.Tensor)),
                       retain_graph=keep, source=_where())

    def tensors_at_end(self, scope: dict[str, Any] | None) -> None:
        """One tensor_at_end event per tensor the program holds by name (call before stop())."""
        if not scope or self._fwd_mode is None:
            return
        for name, t in named_tensors(scope, lambda v: isinstance(v, torch.Tensor)):
            self._fwd_emit(ev.TensorAtEnd, name=name, tensor=self._fwd_id(t), leaf=t.is_leaf,
                           requires_grad=t.requires_grad, grad=grad_state(t.grad if t.is_leaf else None))


def _forget(ids: dict[int, Any], key: int, _ref: Any) -> None:
    ids.pop(key, None)
