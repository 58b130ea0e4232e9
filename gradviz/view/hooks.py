"""What ``import gradviz`` installs of the viewer, at no import cost: ``gradviz.draw``, notebook
display (``_repr_html_``) and ``view()`` on ``Trace`` and on the recorders. The trace layer
knows nothing of the viewer (layers point one way), so the viewer adds these to its classes;
the viewer itself (graphviz, replay, the page) is imported on first use, not with gradviz
(about 0.1-0.3 s)."""

from __future__ import annotations

import importlib
from typing import Any

from gradviz.trace.model import Trace


def _viewer(name: str) -> Any:
    return importlib.import_module(f"gradviz.view.{name}")


def draw(x: Any, **options: Any) -> Any:
    """torchviz's one call: ``gradviz.draw(loss)``; see ``gradviz.view.draw.draw``."""
    return _viewer("draw").draw(x, **options)


def _trace_repr_html(self: Any) -> str:
    return _viewer("notebook").trace_repr_html(self)


def _trace_view(self: Any, **options: Any) -> Any:
    """``gradviz view``'s page for this trace, shown inline in a notebook (``PageView``)."""
    return _viewer("notebook").trace_view(self, **options)


def _recorder_repr_html(self: Any) -> str:
    return _viewer("notebook").recorder_repr_html(self)


def install(*recorders: type) -> None:
    """Add notebook display to ``Trace`` and to the recorder classes given."""
    Trace._repr_html_ = _trace_repr_html  # type: ignore[attr-defined]
    Trace.view = _trace_view  # type: ignore[attr-defined]
    for cls in recorders:
        cls._repr_html_ = _recorder_repr_html
