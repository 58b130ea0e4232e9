"""The user's lines on torch: which line of the user's code made each graph node (a
TorchFunctionMode notes it as the forward runs), and the forward traceback anomaly mode kept."""

from __future__ import annotations

import os
import sys
import threading
import types
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from gradviz._code_positions import frame_columns
from gradviz.torchrec.summaries import busy

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gradviz/
_CLI_DIR = os.path.join(os.path.dirname(_PKG_DIR), "cli")
GRAD_GET = torch.Tensor.grad.__get__  # a method-wrapper, made at each access: compared with ==
MAX_LINES = 100_000  # lines of forward ops no backward reached, kept at most


def ours(fname: str) -> bool:
    return fname.startswith(_TORCH_DIR) or fname.startswith(_PKG_DIR) or fname.startswith(_CLI_DIR)


_NOT_USER: dict[Any, bool] = {}  # code object -> whether it is torch's, gradviz's or frozen


def user_frame(depth: int = 1) -> Any:
    """The innermost frame outside torch and gradviz: the line of the user's code."""
    f = sys._getframe(depth)
    known = _NOT_USER
    while f is not None:
        code = f.f_code
        skip = known.get(code)
        if skip is None:
            name = code.co_filename
            if len(known) > MAX_LINES:
                known.clear()
            skip = known[code] = ours(name) or name.startswith("<frozen")
        if not skip:
            return f
        f = f.f_back
    return None


# A node's line: ("file:line", the op's columns on it (gradviz._code_positions)), or no line.
Site = tuple[str | None, tuple[int, int] | None]
NO_SITE: Site = (None, None)


def where(frame: Any) -> str | None:
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def line_key(node: Any) -> tuple[int, int, str]:
    """What identifies a node for its line without holding it: torch's Python node objects are
    made on demand and take no weak reference, and holding them would keep every forward's saved
    activations. A sequence number is unique on the thread that made the node (each thread counts
    from 0): the key is the thread's, the number and the name. The forward and its backward run
    on one thread in nearly every program; a backward on another thread finds no line."""
    return threading.get_ident(), node._sequence_nr(), node.name()


class _Last(threading.local):
    # (func, the user's frame) of the torch call SourceMode runs on this thread, for the forward
    # side's mode above it (site_of), which clears it when the call returns: the site is made
    # only when an event needs it, and the frame is held no longer than the call
    op: tuple[Any, Any] | None = None


LAST = _Last()


class SourceMode(TorchFunctionMode):
    """Notes, for every graph node a torch call in the user's code makes, the user's line and the
    call's columns on it: the call's outputs' grad_fn and every new node behind it (a composite op
    makes several)."""

    def __init__(self, lines: dict[tuple[int, int, str], Site], entries: Any):
        super().__init__()
        self.lines = lines
        self.entries = entries  # the recorder's backward/grad wrappers: run as they are
        self.note_last = False  # whether to note the call's frame in LAST (the forward side's mode clears it)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if getattr(func, "_gradviz_entry", False):
            # torch.autograd.backward/grad dispatch to the mode: the recorder's wrapper already
            # made the task, so the original runs (once) rather than the wrapper again
            while getattr(func, "_gradviz_entry", False) and hasattr(func, "__wrapped__"):
                func = func.__wrapped__
            return func(*args, **(kwargs or {}))
        if busy():
            return func(*args, **(kwargs or {}))
        if func == GRAD_GET and len(args) == 1 and not kwargs:
            t = args[0]
            if t.is_leaf or t.retains_grad:
                # a leaf's .grad (an optimizer reads each): torch warns only of a non-leaf's, so
                # no warning can need the user's line, and a gradient without a node needs no
                # tag: no walk of the frames for either
                out = func(t)
                if out is None or out.grad_fn is None or not torch.is_grad_enabled():
                    return out
                self._tag_out(out, user_frame(1))
                return out
        frame = user_frame(1)
        if self.note_last:
            # for the forward side's mode above, which asks for the same site (site_of) and
            # clears it once the call is noted: the frame stays at the call until then
            LAST.op = (func, frame)
        out = call_from(frame, func, args, kwargs or {})
        if not torch.is_grad_enabled():
            return out
        self._tag_out(out, frame)
        return out

    def _tag_out(self, out: Any, frame: Any) -> None:
        """Tag the nodes behind the call's outputs with the user's line at ``frame``."""
        items = out if isinstance(out, (tuple, list)) else (out,)
        site: Site | None = None  # made for the first node to tag: most calls make none (a .grad read)
        for t in items:
            gf = getattr(t, "grad_fn", None) if isinstance(t, torch.Tensor) else None
            if gf is None or line_key(gf) in self.lines:
                continue
            if site is None:
                site = (where(frame), frame_columns(frame))
            self._tag(gf, site)

    def _tag(self, gf: Any, src: Site) -> None:
        lines = self.lines
        if len(lines) > MAX_LINES:  # lines of forward ops no backward ever reached
            try:
                for k in list(lines)[: len(lines) // 2]:
                    lines.pop(k, None)
            except RuntimeError:  # another thread's forward added one meanwhile: next time
                pass
        todo = [gf]
        lines[line_key(gf)] = src
        while todo:
            n = todo.pop()
            for f, _ in n.next_functions:
                if f is None or hasattr(f, "variable"):
                    continue
                k = line_key(f)
                if k not in lines:
                    lines[k] = src
                    todo.append(f)


# (file, line) of a user's call site -> (its module's globals, a function whose one line is there)
_CALLERS: dict[tuple[str, int], tuple[dict[str, Any], Any]] = {}


def call_from(frame: Any, func: Any, args: Any, kwargs: Any) -> Any:
    """func(*args, **kwargs), called from a function whose code is at the user's line and whose
    globals are the user's module's: a warning torch raises inside (from C++, at the innermost
    Python frame; or from Python with a stacklevel counted from the user's call) then names the
    user's file and line, and goes to that module's warning registry, as without the mode."""
    if frame is None or frame.f_lineno is None:
        return func(*args, **kwargs)
    g = frame.f_globals
    key = (frame.f_code.co_filename, frame.f_lineno)
    known = _CALLERS.get(key)
    if known is None or known[0] is not g:
        if len(_CALLERS) > MAX_LINES:
            _CALLERS.clear()
        src = "\n" * (frame.f_lineno - 1) + "def _torch_call(f, a, k): return f(*a, **k)\n"
        code = next(c for c in compile(src, key[0], "exec").co_consts if isinstance(c, types.CodeType))
        known = _CALLERS[key] = (g, types.FunctionType(code, g, "_torch_call"))
    return known[1](func, args, kwargs)


def anomaly_traceback(node: Any) -> str | None:
    """The forward traceback anomaly mode stored on the node, if it ran under detect_anomaly."""
    try:
        tb = node.metadata.get("traceback_")
    except (AttributeError, RuntimeError):
        return None
    if not tb:
        return None
    return "".join(tb) if isinstance(tb, list) else str(tb)
