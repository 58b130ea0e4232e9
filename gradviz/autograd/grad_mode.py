"""Grad mode and anomaly mode.

Grad mode is thread-local, as in torch: each thread starts with grad enabled, and the engine sets
it to ``create_graph`` on whichever thread runs a task's nodes. The context managers save the
previous value on entry and restore it on exit. Anomaly mode is process-wide, as in torch.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any

from gradviz.autograd import forward_events


class _GradState(threading.local):
    # grad: torch's grad mode (is_grad_enabled); record() makes a node only while it is on.
    # enabled: whether ops go on to record() at all, the one flag each op reads first: grad mode,
    #   or a dual level holding tangents (forward AD ignores grad mode, as torch's). Internal
    #   blocks that must record nothing (no node, no tangent) turn this one off alone.
    grad = True
    enabled = True


_state = _GradState()


class _ForwardLive:
    """Whether the dual level holds tangents (set by gradviz.autograd.forward_state, which keeps
    the level): grad mode's setters keep ``enabled`` on while it does."""

    __slots__ = ("live",)

    def __init__(self) -> None:
        self.live = False


forward = _ForwardLive()


def is_grad_enabled() -> bool:
    return _state.grad


def _set_enabled(mode: bool) -> None:
    _state.grad = mode
    _state.enabled = mode or forward.live


# The contexts below restore both flags as they found them (an internal block may have turned
# the ops' flag off alone).


class _DecoratorContext:
    """A save/restore context manager that also works as a function decorator."""

    def __call__(self, fn: Callable) -> Callable:
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn: Callable) -> Callable:
        """A generator runs under the mode only while it runs, as torch's decorators do: each
        resume enters the context and each yield leaves it (a with-block around the whole
        generator would leak the mode to the caller between yields)."""
        args = self._args()
        cls = self.__class__

        @functools.wraps(fn)
        def generator(*a: Any, **kw: Any) -> Any:
            gen = fn(*a, **kw)
            try:
                with cls(*args):
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with cls(*args):
                            gen.close()
                        raise
                    except BaseException:
                        with cls(*args):
                            response = gen.throw(*sys.exc_info())
                    else:
                        with cls(*args):
                            response = gen.send(request)
            except StopIteration as e:
                return e.value

        return generator

    def _args(self) -> tuple:
        return ()


class _NoParamDecoratorContext(_DecoratorContext):
    """One that takes no arguments, so that it may also decorate without parentheses:
    ``@no_grad`` as well as ``@no_grad()``, as torch's."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)



def _report(mode: str, enter: bool, enabled: bool) -> None:
    """A grad-mode block the user's own code entered or left (gradviz's internal blocks, such as
    an optimizer step's, are not the user's and not reported)."""
    if forward_events.engine.probe is not None:
        caller = sys._getframe(2).f_code.co_filename
        if not caller.startswith(forward_events._PKG_DIR):
            forward_events.grad_mode(mode, enter, enabled)

class no_grad(_NoParamDecoratorContext):  # noqa: N801
    """Disable graph building on this thread inside the block (thread-local)."""

    def __enter__(self) -> None:
        self.prev = _state.grad, _state.enabled
        _set_enabled(False)
        _report("no_grad", True, False)

    def __exit__(self, *exc: object) -> None:
        _state.grad, _state.enabled = self.prev
        _report("no_grad", False, self.prev[0])


class enable_grad(_NoParamDecoratorContext):  # noqa: N801
    """Enable graph building on this thread inside the block (thread-local)."""

    def __enter__(self) -> None:
        self.prev = _state.grad, _state.enabled
        _set_enabled(True)
        _report("enable_grad", True, True)

    def __exit__(self, *exc: object) -> None:
        _state.grad, _state.enabled = self.prev
        _report("enable_grad", False, self.prev[0])


class set_grad_enabled(_DecoratorContext):  # noqa: N801
    """Set grad mode on this thread; takes effect at once, and as a context manager restores it."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self.prev = _state.grad, _state.enabled
        _set_enabled(self.mode)
        _report("set_grad_enabled", True, self.mode)

    def __call__(self, fn: Callable) -> Callable:
        # used as a decorator, the mode set by __init__ was not meant for the caller: torch
        # puts the previous one back
        _state.grad, _state.enabled = self.prev
        return super().__call__(fn)

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"

    def _args(self) -> tuple:
        return (self.mode,)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _state.grad, _state.enabled = self.prev
        _report("set_grad_enabled", False, self.prev[0])


class _AnomalyState:
    # Slots: the engine reads ``enabled`` per node, and Python 3.11 specializes a slot read
    # (a class attribute read through the instance is a lookup each time).
    __slots__ = ("enabled", "check_nan")

    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


anomaly = _AnomalyState()


def is_anomaly_enabled() -> bool:
    return anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return anomaly.check_nan


class detect_anomaly(_DecoratorContext):  # noqa: N801
    """Record forward tracebacks in new nodes and check backward outputs for NaN (process-wide)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def _args(self) -> tuple:
        return (self.check_nan,)

    def __enter__(self) -> None:
        self.prev = (anomaly.enabled, anomaly.check_nan)
        anomaly.enabled, anomaly.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        anomaly.enabled, anomaly.check_nan = self.prev


class set_detect_anomaly(_DecoratorContext):  # noqa: N801
    """Turn anomaly mode on or off at once; as a context manager, restore it on exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (anomaly.enabled, anomaly.check_nan)
        self.mode, self.check_nan = bool(mode), check_nan
        anomaly.enabled, anomaly.check_nan = self.mode, check_nan

    def _args(self) -> tuple:
        return (self.mode, self.check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        anomaly.enabled, anomaly.check_nan = self.prev


_multithreading = [True]  # torch.autograd.set_multithreading_enabled's flag


class set_multithreading_enabled(_DecoratorContext):  # noqa: N801 - torch's name
    """Whether backward may use the device threads; the flag is kept (and restored on exit), and
    gradviz's engine runs its device queues on their threads whatever it says."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.prev = _multithreading[0]
        _multithreading[0] = self.mode

    def _args(self) -> tuple:
        return (self.mode,)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _multithreading[0] = self.prev
