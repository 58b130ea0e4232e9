"""Small programs the diff tests record, two runs of which differ in one way or another."""

from __future__ import annotations

import gradviz
from gradviz.trace.model import Trace


def log_grad(g):
    """An observe-only hook: returns nothing, changes nothing."""
    return None


def program(*, hook: bool = False, seed: int = 0, fail: bool = False, passes: int = 2, sin: bool = False,
            grad: bool = False) -> None:
    """``passes`` backward passes of tanh (``sin``) of x @ w (``grad``: by autograd.grad), w from
    ``seed``, a hook on the product (``hook``); ``fail``: a ValueError at the end."""
    gradviz.manual_seed(seed)
    w = gradviz.randn(3, 2, requires_grad=True)
    x = gradviz.ones(4, 3)
    for _ in range(passes):
        h = x @ w
        if hook:
            h.register_hook(log_grad)
        y = (h.sin() if sin else h.tanh()).sum()
        if grad:
            gradviz.autograd.grad(y, [w])
        else:
            y.backward()
    if fail:
        raise ValueError("the data loader ran dry")


def record(path, **kw) -> Trace:
    """``program(**kw)`` recorded into ``path`` (its ValueError caught), loaded."""
    try:
        with gradviz.trace(str(path)):
            program(**kw)
    except ValueError:
        pass
    return gradviz.load(str(path))
