"""Draw the backward graph a trace recorded: what ran, in which order, on which thread, what
was saved, where each node came from, and (``step``) what the engine was doing after the first N events.

``render(trace, "graph.svg")`` writes one picture per graph task (or the one ``task`` asks
for); ``dot_source(trace, task)`` gives the DOT text. The picture is built in three stages:
``gradviz.render.model`` (trace -> graph model, collapsing big graphs), ``gradviz.render.dot``
(model -> DOT, escaping every untrusted string) and graphviz's ``dot`` or ``sfdp`` (DOT ->
svg/png/pdf), chosen by the number of boxes left to draw.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gradviz.render import model as gm
from gradviz.render.dot import to_dot
from gradviz.trace.model import Trace

FORMATS = ("svg", "png", "pdf", "dot")
LAYOUTS = ("dot", "dot-fast", "sfdp", "fixed")
DEFAULT_MAX_NODES = 400  # boxes; past this, collapse (dot lays out ~400 boxes in about a second)
# Measured here (graphviz 2.43, synthetic backward graphs, --expand): dot with full labels
# takes ~1 s per 400 boxes; with one-line labels and fewer iterations, 2-9 s at 5,000 boxes;
# past that dot and sfdp both take minutes at 20,000, while the fixed layered layout computed
# by gradviz.render.layout draws 20,000 boxes in ~2 s.
DOT_FAST_ABOVE = 600  # boxes past which dot runs with compact labels and fewer iterations
FIXED_ABOVE = 3000  # boxes past which gradviz lays the graph out itself (neato -n2 draws it)

INSTALL_HINT = (
    "install Graphviz: 'apt-get install graphviz' (Debian/Ubuntu), 'brew install graphviz' (macOS), "
    "'conda install graphviz', or see https://graphviz.org/download/; '--format dot' works without it"
)


class RenderError(Exception):
    """A render request that cannot be met; the message is one line meant for the user."""


class GraphvizNotFound(RenderError):
    """The Graphviz programs (dot, sfdp) are not installed."""


@dataclass
class Picture:
    """One rendered picture: the graph task it shows and where it was written."""

    task: int | None
    path: Path | None
    dot: str
    boxes: int  # boxes drawn
    nodes: int  # graph nodes behind them
    layout: str


def _as_trace(trace: Trace | str | os.PathLike[str]) -> Trace:
    if isinstance(trace, Trace):
        return trace
    from gradviz.trace.file import load

    return load(trace)


def choose_layout(boxes: int) -> str:
    """dot for readable layered pictures; its tuned variant, then a precomputed layout."""
    if boxes > FIXED_ABOVE:
        return "fixed"
    if boxes > DOT_FAST_ABOVE:
        return "dot-fast"
    return "dot"


def build_model(
    trace: Trace, task: int | None = None, *, step: int | None = None, grads: bool = False,
    max_nodes: int = DEFAULT_MAX_NODES, expand: bool = False, group_by: str | None = None,
) -> gm.GraphModel:
    """The graph model of one task (or the forward graph if the trace has no task)."""
    if task is not None and task not in trace.tasks:
        raise RenderError(f"no graph task {task} in the trace ({describe_ids(list(trace.tasks))})")
    if step is not None and not 0 <= step <= len(trace):
        n = len(trace)
        raise RenderError(f"step {step} is out of range: the trace has {n} events (0..{n})")
    if max_nodes < 1:
        raise RenderError("--max-nodes must be at least 1")
    if step is not None:
        # The fold first: it reads (and frees) the lines a lazy load kept decoded for it
        # (``load(fold_to=)``), before the model's 200k boxes are made beside them. The graph's
        # nodes just before: they are read from those same lines instead of decoding them again.
        from gradviz.replay.state import state_once

        trace.nodes  # noqa: B018 (a cached property, filled here for the reason above)
        state_once(trace, step)
    model = gm.build(trace, task, grads=grads)
    if step is not None:
        gm.apply_state(trace, model, step)
    try:
        gm.collapse(model, max_nodes, group_by=group_by, expand=expand)
    except ValueError as e:
        raise RenderError(str(e)) from None
    return model


def dot_source(
    trace: Trace | str | os.PathLike[str], task: int | None = None, *, step: int | None = None,
    grads: bool = False, max_nodes: int = DEFAULT_MAX_NODES, expand: bool = False,
    group_by: str | None = None,
) -> str:
    """The DOT text of one task's picture (if ``task`` is None: the one running at ``step``,
    else the first)."""
    t = _as_trace(trace)
    if task is None and t.tasks:
        task = task_at(t, step) if step is not None else next(iter(t.tasks))
    m = build_model(t, task, step=step, grads=grads, max_nodes=max_nodes, expand=expand, group_by=group_by)
    return to_dot(m, layout=choose_layout(m.drawn()))


def output_format(path: str | os.PathLike[str] | None, format: str | None) -> str:
    """The format asked for: ``format`` if given, else the file's extension, else svg."""
    ext = Path(path).suffix.lower().lstrip(".") if path is not None else ""
    ext = "dot" if ext == "gv" else ext
    if format is not None:
        format = format.lower()
        if format not in FORMATS:
            raise RenderError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})")
        if ext in FORMATS and ext != format:
            raise RenderError(f"--format {format} contradicts the output file's extension .{ext}")
        return format
    if ext in FORMATS:
        return ext
    if path is not None and ext:
        raise RenderError(f"cannot tell the format from '.{ext}': use .svg, .png, .pdf or .dot, or --format")
    return "svg"


def describe_ids(ids: list[int], what: str = "tasks") -> str:
    """A few ids in full, many as a range and a count: never thousands of numbers on one line."""
    if not ids:
        return f"{what}: none"
    if len(ids) <= 8:
        return f"{what}: {', '.join(map(str, ids))}"
    return f"{len(ids):,} {what}, {min(ids)}..{max(ids)}"


def default_output(trace: Trace, fmt: str, step: int | None = None) -> Path:
    """In the current folder, named after the trace (every command's rule):
    diamond.trace.json -> diamond.svg; with a step, diamond.step40.svg."""
    stem = "gradviz-graph"
    if trace.path:
        stem = Path(trace.path).name
        for suffix in (".json", ".trace"):
            stem = stem.removesuffix(suffix)
        stem = stem or "trace"
    if step is not None:
        stem += f".step{step}"
    return Path(f"{stem}.{fmt}")


def first_task(trace: Trace) -> int | None:
    """The task a picture shows by default: the first that failed, else the first."""
    for tid, t in trace.tasks.items():
        if t.status != "ok":
            return tid
    return next(iter(trace.tasks), None)


def nothing_to_draw(trace: Trace) -> str:
    """Why a trace with no graph has no picture: the program's error, if it stopped on one."""
    end = trace.end
    if end is not None and end.error:
        return f"nothing to draw: the program stopped ({end.status}) before building a graph: {end.error}"
    if end is not None and end.status != "ok":
        return f"nothing to draw: the program's run ended {end.status} before building a graph"
    return "nothing to draw: the program built no autograd graph (no tensor that requires grad was used)"


def task_at(trace: Trace, step: int) -> int | None:
    """The task a picture at ``step`` shows: the last one begun within the first ``step`` events
    (the pass running then, or the last that ran); before any began, the first."""
    begun = None
    for tid, t in trace.tasks.items():
        if t.begin.seq >= step:
            break
        begun = tid
    return begun if begun is not None else next(iter(trace.tasks), None)


def _for_task(path: Path, task: int) -> Path:
    return path.with_name(f"{path.stem}.task{task}{path.suffix}")


def run_graphviz(dot: str, fmt: str, out: Path, layout: str = "dot") -> None:
    """Lay out and draw ``dot`` into ``out`` with graphviz's ``dot`` (or ``sfdp``)."""
    program, args = {"sfdp": ("sfdp", []), "fixed": ("neato", ["-n2"])}.get(layout, ("dot", []))
    exe = shutil.which(program)
    if exe is None:
        raise GraphvizNotFound(f"the Graphviz program '{program}' is not installed: {INSTALL_HINT}")
    proc = subprocess.run(
        [exe, *args, f"-T{fmt}", "-o", str(out)], input=dot.encode("utf-8"), capture_output=True, check=False
    )
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError(f"{program} failed ({proc.returncode}): {msg[-1] if msg else 'no message'}")


def _engine_note(t: Trace) -> list[str]:
    """torchrec: a picture of real torch's run says so, and what in it was inferred."""
    from gradviz.trace.provenance import engine

    name, version = engine(t)
    if name != "torch":
        return []
    return [f"recorded from torch {version}: node runs and gradients observed by hooks; queue order, "
            "InputBuffer slots and dependency counts derived by the recorder"]


def mark_why(trace: Trace, model: gm.GraphModel) -> None:
    """``gradviz why``'s first answer on the picture: the culprit node drawn as an error (red, the
    reason and the user's line in it), the answer's text as a note."""
    from gradviz.replay.why import why as answer_why

    a = answer_why(trace)
    if a.reason in ("no_problem", "all_finite", "no_error"):
        model.notes.append("why: no problem found")
        return
    where = a.where.rsplit("/", 1)[-1] if a.where else "line unknown"
    n = model.nodes.get(a.node_id) if a.node_id is not None else None
    if n is not None:
        mark = f"why: {a.reason} at {where}"
        n.error = mark if n.error is None else f"{n.error} · {mark}"
        n.error_seq = -1  # shown at any step
    model.notes.append(f"why: {a.reason} at {where}: {a.text}")


def render(
    trace: Trace | str | os.PathLike[str], path: str | os.PathLike[str] | None = None,
    format: str | None = None, *, task: int | None = None, step: int | None = None,
    grads: bool = False, max_nodes: int = DEFAULT_MAX_NODES, expand: bool = False,
    group_by: str | None = None, layout: str | None = None, all_tasks: bool = False, why: bool = False,
) -> list[Picture]:
    """Render a trace's backward graph(s) to files; returns one Picture per file written.

    path: the output file (default: in the current folder, ``<name>.svg``, or
    ``<name>.step<N>.svg`` with a step). task: the graph task to draw (default: the first that
    failed, else the first); all_tasks: one file per task instead, ``<stem>.task<N>.<ext>``. format: svg, png, pdf
    or dot (default: from the extension). step: colour nodes by their state after the first
    ``step`` events, drawing the task running then unless ``task`` says another. max_nodes:
    collapse chains, repeated blocks, then segments until at most
    this many boxes remain; expand: draw every node. group_by: "line" or "function" boxes all
    nodes created by one source line / function. layout: "dot", "dot-fast", "sfdp" or "fixed" (default:
    chosen from the number of boxes). why: mark ``gradviz why``'s answer: its node drawn red
    with the reason and the culprit line, and the answer as a note.
    """
    t = _as_trace(trace)
    fmt = output_format(path, format)
    out = Path(path) if path is not None else default_output(t, fmt, step)
    if layout is not None and layout not in LAYOUTS:
        raise RenderError(f"unknown layout {layout!r} ({', '.join(LAYOUTS)})")
    if task is not None and all_tasks:
        raise RenderError("--task and --all contradict each other: pick one")
    if task is not None:
        tasks: list[int | None] = [task]
    elif all_tasks:
        tasks = list(t.tasks) or [None]
    elif step is not None:
        tasks = [task_at(t, step)]
    else:
        tasks = [first_task(t)]
    if tasks == [None] and not t.nodes and t.end is not None:  # a cut trace draws what it holds
        raise RenderError(nothing_to_draw(t))
    if len(tasks) > 1 and (out.exists() or out.is_symlink()) and not out.is_file():
        # /dev/full.task1.svg and the like: one name per task only makes sense beside a file
        raise RenderError(f"{out}: not a regular file, so it cannot name one picture per task")
    if fmt != "dot" and shutil.which("dot") is None:  # fail before any work
        raise GraphvizNotFound(f"the Graphviz program 'dot' is not installed: {INSTALL_HINT}")
    pictures = []
    for tid in tasks:
        m = build_model(t, tid, step=step, grads=grads, max_nodes=max_nodes, expand=expand, group_by=group_by)
        m.notes.extend(_engine_note(t))
        if why:
            mark_why(t, m)
        lay = layout or choose_layout(m.drawn())
        dot = to_dot(m, layout=lay)
        target = _for_task(out, tid) if len(tasks) > 1 and tid is not None else out
        target.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "dot":
            target.write_text(dot, encoding="utf-8")
        else:
            run_graphviz(dot, fmt, target, lay)
        pictures.append(Picture(tid, target, dot, m.drawn(), len(m.nodes), lay))
    return pictures


__all__ = [
    "FORMATS", "GraphvizNotFound", "Picture", "RenderError", "build_model", "choose_layout",
    "dot_source", "render", "run_graphviz", "task_at",
]
