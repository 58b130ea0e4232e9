"""The recorder's forward side: ops, in-place writes, grad-mode blocks, ``.grad`` resets,
detaches and backward calls as events (``gradviz why`` reasons over them), and, as the
recording stops, the tensors the program holds by name with the state of their ``.grad``.

Inside a no_grad block the user entered, ops make no nodes, so nothing in the engine reports
them: a profile function (this thread's, only while such a block is open, and only when no other
profiler is set) notes each op the user's code (or a module's forward) calls with a tensor that
requires grad, or one such an op made. Outside those blocks it costs nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

from gradviz._code_positions import frame_columns
from gradviz.tensor import Tensor

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where gradviz's ops are (a call into one of these, from the user, is an op of the forward)...
_OP_FILES = tuple(
    os.path.join(_PKG_DIR, p)
    for p in ("ops" + os.sep, "tensor.py", "functional.py", os.path.join("nn", "functional"),
              os.path.join("nn", "_functional"), "linalg.py")
)
# ...and the gradviz code whose calls count as the user's: a module's forward uses its parameters.
_MODULES_DIR = os.path.join(_PKG_DIR, "nn", "modules") + os.sep


def _op_name(node: Any) -> str:
    """The forward op of a node: "MulBackward0" -> "mul", "torch::autograd::CopySlices" -> "copyslices"."""
    name = node.name().rsplit("::", 1)[-1]
    i = name.find("Backward")
    if i > 0:
        name = name[:i]
    return name[:1].lower() + name[1:]


def finite(data: Any) -> bool | None:
    """Whether every element of an array is finite (None: not a floating-point array). A sum
    first: one pass, no mask, and finite for almost every finite array."""
    kind = getattr(getattr(data, "dtype", None), "kind", None)
    if kind not in ("f", "c"):
        return None
    with np.errstate(all="ignore"):
        s = complex(data.sum())
    if s == s and abs(s) != float("inf"):
        return True
    xp = sys.modules.get(type(data).__module__.split(".")[0], np)
    return bool(xp.isfinite(data).all())


def grad_state(g: Any) -> str:
    """A ``.grad``'s state for tensor_at_end: none, zero, nonzero or nonfinite."""
    if g is None:
        return "none"
    data = g._data if isinstance(g, Tensor) else g.detach().cpu().numpy()
    data = np.asarray(data) if type(data) is not np.ndarray and hasattr(data, "__array__") else data
    if finite(data) is False:
        return "nonfinite"
    return "nonzero" if bool(data.any()) else "zero"


def named_tensors(scope: dict[str, Any], is_tensor: Any) -> list[tuple[str, Any]]:
    """(name, tensor) for each tensor a scope holds: its variables, and each module's parameters
    under ``var.path`` (a tensor reached twice keeps its first name)."""
    out: list[tuple[str, Any]] = []
    seen: set[int] = set()
    for k, v in list(scope.items()):
        if k.startswith("_"):
            continue
        if is_tensor(v):
            if id(v) not in seen:
                seen.add(id(v))
                out.append((k, v))
        elif callable(getattr(v, "named_parameters", None)) and not isinstance(v, type):
            try:
                params = list(v.named_parameters())
            except Exception:  # noqa: BLE001 - a user object with its own named_parameters
                continue
            for pname, p in params:
                if is_tensor(p) and id(p) not in seen:
                    seen.add(id(p))
                    out.append((f"{k}.{pname}", p))
    return out


def script_scope(result: Any, exc: BaseException | None, script: str) -> dict[str, Any] | None:
    """The globals of a script run by runpy: run_path's result, or, when the script raised,
    those of the script's frame in the traceback."""
    if isinstance(result, dict):
        return result
    tb = exc.__traceback__ if exc is not None else None
    path = os.path.abspath(script)
    scope = None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            scope = tb.tb_frame.f_globals
        tb = tb.tb_next
    return scope


class _NoGradState(threading.local):
    depth = 0  # user no_grad blocks open on this thread
    installed = False  # this thread's profile function is ours
    tainted: set[int] | None = None  # ids of tensors an op noted in the block made
    pending: dict[Any, tuple] | None = None  # frame -> (op, inputs, source, columns) until it returns


def forward_default() -> bool:
    """Whether recordings take the forward side in: yes, unless GRADVIZ_FORWARD=0 (a trace of
    the backward alone, as before these events, numbered as before)."""
    return os.environ.get("GRADVIZ_FORWARD", "1") != "0"


class ForwardMixin:
    """The Probe's forward-side calls, for the Recorder (which provides _put, _lock, _current_tid)."""

    _put: Any
    _lock: Any
    _current_tid: Any

    @property
    def forward(self) -> bool:
        """Record the forward side (default: ``forward_default()``, read when first asked)."""
        on = self.__dict__.get("_forward")
        if on is None:
            on = self.__dict__["_forward"] = forward_default()
        return on

    @forward.setter
    def forward(self, on: bool) -> None:
        self.__dict__["_forward"] = bool(on)

    def forward_op(self, node: Any, inputs: tuple, outputs: list) -> None:
        if not self.forward:
            return
        out = outputs[0] if outputs else None
        ok = finite(out._data) if out is not None else None
        row = (
            _op_name(node), tuple([t._id for t in inputs if t is not None]), None if out is None else out._id,
            node._id, True, "grad", ok, node.source, getattr(node, "columns", None),
        )
        with self._lock:
            self._put("forward_op", self._current_tid(), *row)

    def version_bump(self, tensor: Any, op: str, source: str | None,
                     columns: tuple[int, int] | None = None) -> None:
        if not self.forward:
            return
        with self._lock:
            self._put("version_bump", self._current_tid(), tensor._id, tensor._version_counter[0], op, source,
                      columns)

    def grad_mode(self, mode: str, enter: bool, enabled: bool, source: str | None) -> None:
        if not self.forward:
            return
        with self._lock:
            self._put("grad_mode", self._current_tid(), mode, enter, enabled, source)
        st = self._nograd_state()
        if enter and not enabled:
            st.depth += 1
            if st.depth == 1 and sys.getprofile() is None:
                st.installed, st.tainted, st.pending = True, set(), {}
                sys.setprofile(self._profile)
        elif not enter and st.depth > 0:
            st.depth -= 1
            if st.depth == 0 and st.installed:
                if sys.getprofile() == self._profile:
                    sys.setprofile(None)
                st.installed, st.tainted, st.pending = False, None, None

    def grad_reset(self, tensor: Any, how: str, source: str | None) -> None:
        if not self.forward:
            return
        with self._lock:
            self._put("grad_reset", self._current_tid(), tensor._id, how, source)

    def non_leaf_grad_read(self, tensor: Any, source: str | None) -> None:
        if not self.forward:
            return
        with self._lock:
            self._put("non_leaf_grad_read", self._current_tid(), tensor._id, source)

    def detach(self, op: str, tensor: Any, output: Any, source: str | None) -> None:
        if not self.forward:
            return
        with self._lock:
            self._put("detach", self._current_tid(), op, tensor._id, None if output is None else output._id, source)

    def backward_call(self, api: str, tensors: tuple, inputs: tuple, retain_graph: bool, source: str | None) -> None:
        if not self.forward:
            return
        ids = tuple([t._id for t in tensors if isinstance(t, Tensor)])
        ins = tuple([t._id for t in inputs if isinstance(t, Tensor)])
        with self._lock:
            self._put("backward_call", self._current_tid(), api, ids, ins, retain_graph, source)

    def tensors_at_end(self, scope: dict[str, Any] | None) -> None:
        """One tensor_at_end event per tensor ``scope`` (the program's globals, or a frame's
        variables) holds by name; call it before stop()."""
        source = getattr(self, "_source", None)
        if source is not None and hasattr(source, "tensors_at_end"):  # real torch's tensors: its source's
            source.tensors_at_end(scope)
            return
        if not scope or not self.forward:
            return
        rows = []
        for name, t in named_tensors(scope, lambda v: isinstance(v, Tensor)):
            rows.append((name, t._id, t._grad_fn is None, t.requires_grad, grad_state(t._grad)))
        with self._lock:
            tid = self._current_tid()
            for row in rows:
                self._put("tensor_at_end", tid, *row)

    # -- ops inside the user's no_grad blocks

    def _nograd_state(self) -> _NoGradState:
        st = self.__dict__.get("_nograd")
        if st is None:
            st = self.__dict__.setdefault("_nograd", _NoGradState())
        return st

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if not code.co_filename.startswith(_OP_FILES):
                return
            back = frame.f_back
            if back is not None:
                caller = back.f_code.co_filename
                if caller.startswith(_PKG_DIR) and not caller.startswith(_MODULES_DIR):
                    return  # inside an op: its caller was noted, if it is one
            st = self._nograd_state()
            tainted = st.tainted
            if tainted is None:
                return
            ids, hit = [], False
            for v in frame.f_locals.values():
                if isinstance(v, Tensor):
                    ids.append(v._id)
                    if v._requires_grad or v._id in tainted:
                        hit = True
            if hit:
                f = back
                while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
                    f = f.f_back
                source = f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None
                st.pending[frame] = (code.co_name, tuple(ids), source, frame_columns(f))  # type: ignore[index]
        elif event == "return":
            st = self._nograd_state()
            pending = st.pending
            if pending:
                noted = pending.pop(frame, None)
                if noted is not None:
                    out = arg._id if isinstance(arg, Tensor) else None
                    if out is not None:
                        st.tainted.add(out)  # type: ignore[union-attr]
                    op, ids, source, cols = noted
                    mode = "no_grad"
                    with self._lock:
                        self._put("forward_op", self._current_tid(), op.strip("_") or op, ids, out, None, False, mode,
                                  None, source, cols)
