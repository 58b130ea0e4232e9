"""torch.fork / torch.wait outside TorchScript: eager torch runs the forked function at once and
hands back a completed torch.Future; ``wait`` returns its value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Future", "fork", "wait"]


class Future:
    """A completed (or to-be-completed with set_result) value, as torch.Future's basic API."""

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._callbacks: list[Callable[[Future], Any]] = []

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        if self._done:
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can only "
                               "be marked completed once.")
        self._value, self._done = result, True
        for cb in self._callbacks:
            cb(self)

    def wait(self) -> Any:
        if not self._done:
            raise RuntimeError("gradviz has no pending futures: this one was never completed")
        return self._value

    value = wait

    def then(self, callback: Callable[[Future], Any]) -> Future:
        nxt = Future()
        if self._done:
            nxt.set_result(callback(self))
        else:
            self._callbacks.append(lambda f: nxt.set_result(callback(f)))
        return nxt

    def add_done_callback(self, callback: Callable[[Future], Any]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


Future.__module__ = "torch"


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Future) -> Any:
    return future.wait()
