"""The whole run at a glance: a pure function of the trace's events to rich renderables.

A time axis with ticks and the graph tasks' boundaries, one lane per thread (a busy/idle bar over
the run's time, then a summary per node name: runs, total and mean time), queue depth over time per
ready queue (a sparkline), the InputBuffers that received more than one gradient, the graph tasks
with their outcome, and errors, highlighted. With a task, everything is zoomed to that task's span.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gradviz.replay import views
from gradviz.replay.phrases import Phrases
from gradviz.trace import events as ev

SPARK = " ▁▂▃▄▅▆▇█"


def _dur(ns: float) -> str:
    if ns < 1_000:
        return f"{ns:.0f}ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f}µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.1f}ms"
    return f"{ns / 1_000_000_000:.2f}s"


def _table(title: str, *cols: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, c in enumerate(cols):
        last = i == len(cols) - 1
        t.add_column(c, no_wrap=not last, overflow="fold", ratio=1 if last else None)
    return t


def _axis(bar_w: int, t0: int, span_ns: int, ticks: int = 4) -> Text:
    """A ruler under the lanes' bars: tick marks and the time since the start at each."""
    line = ["─"] * bar_w
    labels = [" "] * bar_w
    for k in range(ticks + 1):
        i = round(k * (bar_w - 1) / ticks)
        line[i] = "┼" if 0 < k < ticks else ("├" if k == 0 else "┤")
        lab = "0" if k == 0 else _dur(span_ns * k / ticks)
        at = min(max(0, i - len(lab) // 2), bar_w - len(lab)) if k else 0
        if all(c == " " for c in labels[max(0, at - 1):at + len(lab)]):
            labels[at:at + len(lab)] = lab
    return Text("".join(line) + "\n" + "".join(labels), style="dim")


def _task_marks(trace: Any, bar_w: int, t0: int, span_ns: int, task: int | None) -> Text:
    """Where each graph task begins (│) on the lanes' scale, with its id where there is room."""
    cells = [" "] * bar_w
    marks: list[tuple[int, int]] = []
    for info in trace.tasks.values():
        if (task is None or info.id == task) and t0 <= info.begin.ts <= t0 + span_ns:
            marks.append((int((info.begin.ts - t0) / span_ns * (bar_w - 1)), info.id))
    for i, _ in marks:
        cells[i] = "│"
    for i, tid in marks:  # ids only into free cells, so no id is half overwritten
        lab = str(tid)
        if i + 1 + len(lab) <= bar_w and all(c == " " for c in cells[i + 1:i + 2 + len(lab)]):
            cells[i + 1:i + 1 + len(lab)] = lab
    return Text("".join(cells), style="magenta")


def _by_name(ss: list[tuple[int, int, int, str]], names: dict[int, str], limit: int) -> Text:
    """Per node name: runs, total and mean time, failures; the most expensive names first."""
    agg: dict[str, list[int]] = {}  # name -> [runs, total ns, failed]
    for b, e_, node, status in ss:
        a = agg.setdefault(names.get(node, f"node {node}"), [0, 0, 0])
        a[0] += 1
        a[1] += e_ - b
        a[2] += status != "ok"
    out = Text()
    ranked = sorted(agg.items(), key=lambda kv: (-kv[1][2], -kv[1][1]))
    for i, (name, (runs, total, failed)) in enumerate(ranked[:limit]):
        out.append("\n" if i else "")
        out.append(name, style="bold red" if failed else "")
        out.append(f" ×{runs}  {_dur(total)} total, {_dur(total / runs)} mean", style="dim")
        if failed:
            out.append(f"  {failed} failed", style="bold red")
    if len(ranked) > limit:
        out.append(f"\n... {len(ranked) - limit} more names", style="dim")
    return out


def timeline_view(trace: Any, task: int | None = None, width: int = 100,
                  max_spans: int = 12, max_rows: int = 40) -> RenderableType:
    """The timeline of ``trace`` (only graph task ``task`` if given, zoomed to its span) for a
    console ``width`` wide. ``max_spans``: node names summarised per thread."""
    events: list[ev.Event] = trace.events
    leaves = views.leaf_names(trace)  # AccumulateGrad runs are summed per leaf: "AccumulateGrad fc1.weight"
    names = {n: f"{i.name} {leaves[n]}" if n in leaves else i.name for n, i in trace.nodes.items()}
    # the span from the least to the greatest ts, not the first and last: a file's ts need not
    # increase (the loader checks each is in range), and every bar index must land in the bar
    t0 = min(e.ts for e in events) if events else 0
    t1 = max(e.ts for e in events) if events else 0
    if task is not None and task in trace.tasks:
        info = trace.tasks[task]
        t0 = info.begin.ts
        t1 = info.end.ts if info.end is not None else t1
    span_ns = max(t1 - t0, 1)
    # The lane column gets what the thread labels leave (label, column gap, table padding).
    label_w = max((len(f"{tid} {th.name}") for tid, th in trace.threads.items()), default=10)
    label_w = max(label_w, max((len(f"{q} {qc.name}") for q, qc in trace.queues.items()), default=0) + 6)
    bar_w = max(10, width - label_w - 5)

    # One pass: spans per thread, queue sizes, buffers, tasks, errors.
    spans: dict[int, list[tuple[int, int, int, str]]] = {}  # tid -> (begin, end, node, status)
    open_: dict[int, list[tuple[int, int]]] = {}
    qsizes: dict[int, list[tuple[int, int]]] = {}
    buffers: dict[tuple[int, int, int], list[int | None]] = {}  # (task, node, slot) -> producers
    errors: list[ev.Event] = []
    task_nodes: dict[int, int] = {}
    for e in events:
        k = type(e)
        if k is ev.NodeBegin or k is ev.NodeEnd:
            if task is not None and e.task != task:
                continue
            if k is ev.NodeBegin:
                open_.setdefault(e.tid, []).append((e.node, e.ts))
            else:
                stack = open_.get(e.tid, [])
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i][0] == e.node:
                        node, b = stack.pop(i)
                        spans.setdefault(e.tid, []).append((b, e.ts, node, e.status))
                        break
                task_nodes[e.task] = task_nodes.get(e.task, 0) + 1
        elif k is ev.QueuePush or k is ev.QueuePop:
            if t0 <= e.ts <= t1:
                qsizes.setdefault(e.queue, []).append((e.ts, e.size))
        elif k is ev.BufferAdd:
            if task is None or e.task == task:
                buffers.setdefault((e.task, e.node, e.slot), []).append(e.producer)
        elif k is ev.Error or k is ev.Anomaly:
            if task is None or e.task == task:
                errors.append(e)
    for tid, stack in open_.items():
        for node, b in stack:
            spans.setdefault(tid, []).append((b, t1, node, "unfinished"))

    parts: list[RenderableType] = []
    head = Text(f"{trace.path or 'trace'}: ", style="bold")
    head.append(f"{len(events)} events over {_dur(events[-1].ts - events[0].ts if events else 0)}, "
                f"{len(trace.threads)} thread(s), {len(trace.nodes)} node(s), {len(trace.tasks)} graph task(s)")
    if trace.truncated:
        head.append("  (truncated: the recording did not finish)", style="bold red")
    if task is not None:
        head.append(f"  showing task {task}: {_dur(span_ns)}")
    parts.append(head)

    # Threads.
    lanes = _table("Threads (busy over time, then time per node name)", "thread", "lane")
    lanes.add_row("time", _axis(bar_w, t0, span_ns))
    lanes.add_row("tasks", _task_marks(trace, bar_w, t0, span_ns, task))
    for tid, th in trace.threads.items():
        ss = sorted(spans.get(tid, []))
        bar = ["·"] * bar_w
        busy = 0
        for b, e_, _, _ in ss:
            lo = min(max(int((b - t0) / span_ns * (bar_w - 1)), 0), bar_w - 1)
            hi = min(max(int((e_ - t0) / span_ns * (bar_w - 1)), 0), bar_w - 1)
            for i in range(lo, hi + 1):
                bar[i] = "█"
        outer_end = -1
        for b, e_, _, _ in ss:  # busy time without double-counting nested (reentrant) spans
            if b >= outer_end:
                busy += e_ - b
                outer_end = e_
            elif e_ > outer_end:
                busy += e_ - outer_end
                outer_end = e_
        lane = Text("".join(bar), style="green")
        lane.append(f"\n{len(ss)} node run(s), busy {_dur(busy)}", style="dim")
        if ss:
            lane.append("\n")
            lane.append_text(_by_name(ss, names, max_spans))
        label = th.name + (f"\n{th.device}" if th.device else f"\n{th.role}")
        lanes.add_row(f"{tid} {label}", lane)
    parts.append(lanes)

    # Queue depth over time.
    qt = _table("Ready queue depth over time", "queue", "max", "depth")
    for q, qc in trace.queues.items():
        pts = qsizes.get(q, [])
        cells = [0] * bar_w
        for ts, size in pts:
            i = int((ts - t0) / span_ns * (bar_w - 1))
            cells[i] = max(cells[i], size)
        peak = max(cells, default=0)
        line = "".join(SPARK[0 if peak == 0 else min(8, -(-c * 8 // peak))] for c in cells)
        qt.add_row(f"{q} {qc.name}", str(peak), Text(line, style="cyan"))
    parts.append(qt)

    # InputBuffers with more than one gradient (accumulated slots, multi-input joins).
    bt = _table("InputBuffer accumulations", "task", "node", "slot", "contributions", "from")
    per_node: dict[tuple[int, int], int] = {}
    for (tk, node, _slot), prods in buffers.items():
        per_node[(tk, node)] = per_node.get((tk, node), 0) + len(prods)
    rows = [(key, prods) for key, prods in buffers.items() if per_node[key[:2]] > 1]
    for (tk, node, slot), prods in rows[:max_rows]:
        labels = ["root" if p is None else f"{names.get(p, p)} ({p})" for p in prods]
        src = Phrases([*(label + "," for label in labels[:-1]), *labels[-1:]])  # a producer stays whole
        bt.add_row(str(tk), Phrases([f"{names.get(node, node)} ({node})"]), str(slot), str(len(prods)), src)
    if len(rows) > max_rows:
        bt.add_row("...", f"{len(rows) - max_rows} more", "", "", "")
    if not rows:
        bt.add_row("-", "no InputBuffer received more than one gradient", "", "", "")
    parts.append(bt)

    # Graph tasks.
    tt = _table("Graph tasks", "task", "kind", "depth", "thread", "nodes run", "duration", "outcome")
    infos = [i for i in trace.tasks.values() if task is None or i.id == task]
    for info in infos[-max_rows:]:
        b = info.begin
        dur = _dur(info.end.ts - b.ts) if info.end is not None else "-"
        out = Text(info.status, style={"ok": "green", "error": "bold red"}.get(info.status, "yellow"))
        if info.end is not None and info.end.error:
            out.append(f": {info.end.error}")
        th = trace.threads.get(b.tid)
        tt.add_row(str(info.id), "backward" if b.accumulate_grad else "grad", str(b.reentrant_depth),
                   th.name if th else str(b.tid), str(task_nodes.get(info.id, 0)), dur, out)
    if len(infos) > max_rows:
        tt.caption = f"the last {max_rows} of {len(infos)} tasks"
    parts.append(tt)

    # Errors.
    if errors:
        et = _table("Errors", "event (step)", "thread", "node", "what")
        index = {id(e): i for i, e in enumerate(events, 1)} if len(errors) else {}
        for e in errors[:max_rows]:
            what = f"{e.type}: {e.message}" if type(e) is ev.Error else f"anomaly: {e.message}"
            th = trace.threads.get(e.tid)
            node = "-" if e.node is None else f"{names.get(e.node, e.node)} ({e.node})"
            et.add_row(f"#{e.seq} ({index.get(id(e), '?')})", th.name if th else str(e.tid), node,
                       Text(what, style="bold red"))
        parts.append(et)
    else:
        parts.append(Text("No errors.", style="green"))
    return Group(*parts)
