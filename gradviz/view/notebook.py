"""Notebook display: a loaded trace (``gradviz.load``) and a recording (``gradviz.record()``)
show a summary and the graph (``_repr_html_``); ``trace.view()`` is ``gradviz view``'s page,
inline in the notebook (an iframe of the page itself: it needs nothing from the network)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from gradviz.render import RenderError, first_task
from gradviz.trace.model import Trace
from gradviz.view.draw import draw
from gradviz.view.page import build_page


class PageView:
    """``gradviz view``'s page as a notebook output: ``_repr_html_`` embeds it; ``html`` is
    the page itself; ``save(path)`` writes it."""

    def __init__(self, page: str, height: int = 900) -> None:
        self.html = page
        self.height = height

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width:100%;height:{self.height}px;'
                'border:1px solid #e5e7eb" sandbox="allow-scripts"></iframe>')

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(self.html, encoding="utf-8")


def summary_html(trace: Trace) -> str:
    """A few lines on the trace, and the graph of its first task (the first failed one first)."""
    tasks = trace.tasks
    failed = [t for t, info in tasks.items() if info.status not in ("ok", "running")]
    errors = [e for e in trace.events if e.kind == "error"]
    rows = [
        ("trace", trace.path or "in memory"),
        ("events", f"{len(trace):,}"),
        ("graph tasks", f"{len(tasks):,}" + (f" ({len(failed)} failed: {', '.join(map(str, failed[:8]))})"
                                            if failed else "")),
        ("nodes", f"{len(trace.nodes):,}"),
        ("threads", ", ".join(t.name for t in trace.threads.values()) or "none"),
    ]
    if errors:
        e: Any = errors[0]
        rows.append(("first error", f"{e.type}: {e.message}"))
    table = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
                    f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    try:
        task = first_task(trace)
        picture = draw(trace, task=task).svg
        caption = f"graph task {task}" if task is not None else "forward graph"
    except RenderError as err:  # no graphviz, or nothing to draw: the summary still shows
        picture, caption = f"<p>(no picture: {html.escape(str(err))})</p>", ""
    more = "trace.view() steps through it; gradviz.draw(trace, task=K, step=N) draws another task or step"
    return (f"<div class='gradviz-trace'><table>{table}</table>"
            f"<div style='color:#6b7280'>{html.escape(caption)} · {html.escape(more)}</div>"
            f"<div style='max-width:100%;overflow:auto'>{picture}</div></div>")


def trace_repr_html(trace: Trace) -> str:
    return summary_html(trace)


def trace_view(trace: Trace, **options: Any) -> PageView:
    """``gradviz view``'s page for this trace, shown inline in a notebook."""
    return PageView(build_page(trace, **options))


def recorder_repr_html(recorder: Any) -> str:
    """A recording shows its trace once stopped (a snapshot while an in-memory one runs)."""
    try:
        trace = recorder.trace
    except RuntimeError as e:  # a file recording still being written
        return f"<p>gradviz recording: {html.escape(str(e))}</p>"
    return summary_html(trace)
