"""Views of the replay state: pure functions of (trace, state) to text and rich renderables.

Nothing here reads files or the terminal; the CLI and the stepper print what these return.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gradviz.replay.phrases import Phrases
from gradviz.replay.state import EngineState, NodeState, QueueEntry, TaskState
from gradviz.trace import events as ev

INT64_MAX = 2**63 - 1

STATE_STYLE = {
    "unreached": "dim",
    "pruned": "dim strike",
    "arriving": "yellow",
    "parked": "yellow",
    "ready": "cyan",
    "queued": "cyan",
    "running": "bold green",
    "done": "green",
    "released": "dim green",
    "error": "bold red",
}


# --- labels ------------------------------------------------------------------------------------


def seqnr(n: int) -> str:
    return "max" if n >= INT64_MAX else str(n)


# --- leaf names -----------------------------------------------------------------------------------
# An AccumulateGrad node writes into one leaf, and the trace names that leaf (``fc1.weight``) in its
# TensorCreated event; EngineState folds NodeCreated without the tensor, so a view that is given only
# a state finds the name here. Every entry point that has the trace (state_view, why, the stepper,
# the timeline) calls use_trace first, so the map belongs to the trace being shown.
_leaf_names: dict[int, str] = {}
_leaf_trace: list[Any] = [None]  # the trace _leaf_names was made from (a list: no global statement)


def leaf_names(trace: Any) -> dict[int, str]:
    """node id -> the name of the leaf that AccumulateGrad node writes into, for named leaves."""
    tensors = trace.tensors
    out: dict[int, str] = {}
    # node_tensors: the AccumulateGrad nodes alone (a Trace has them without a NodeInfo a node)
    pairs = (trace.node_tensors.items() if hasattr(trace, "node_tensors")
             else ((nid, n.tensor) for nid, n in trace.nodes.items() if n.tensor is not None))
    for nid, tensor in pairs:
        te = tensors.get(tensor)
        if te is not None and te.name:
            out[nid] = te.name
    return out


def use_trace(trace: Any) -> None:
    """Name AccumulateGrad nodes by their leaf (``AccumulateGrad fc1.weight``) in the views that follow."""
    if _leaf_trace[0] is not trace:
        _leaf_names.clear()
        _leaf_names.update(leaf_names(trace))
        _leaf_trace[0] = trace


def display_name(node: int | None, name: str) -> str:
    """``AccumulateGrad fc1.weight`` for a named leaf's node; other nodes keep their torch name."""
    leaf = _leaf_names.get(node) if node is not None else None
    return f"{name} {leaf}" if leaf else name


def node_label(state: EngineState, node: int | None) -> str:
    """``MulBackward0 (node 3)``; ``AccumulateGrad fc1.weight (node 1)``."""
    if node is None:
        return "-"
    return f"{display_name(node, state.node_name(node))} (node {node})"


def node_seq_label(state: EngineState, node: int | None) -> str:
    """``MulBackward0 (seq 3)``: how a ready queue sees a node."""
    ns = state.nodes.get(node) if node is not None else None
    if ns is None:
        return node_label(state, node)
    return f"{display_name(ns.id, ns.name)} (seq {seqnr(ns.sequence_nr)})"


def priority_label(priority: Iterable[int], what: str = "node") -> str:
    """(reentrant depth, sequence_nr) for node tasks; wake-up and shutdown tasks pop first."""
    cls, depth, seq = tuple(priority)
    if what != "node" or cls != ev.PRIORITY_NODE:
        return what
    return f"({depth}, {seqnr(seq)})"


def queue_label(state: EngineState, queue: int) -> str:
    q = state.queues.get(queue)
    if q is None:
        return f"queue {queue}"
    return f"{q.device} queue" if q.device != "cpu" else "cpu queue"


def thread_label(state: EngineState, tid: int | None) -> str:
    if tid is None:
        return "-"
    th = state.threads.get(tid)
    return th.name if th is not None else f"thread {tid}"


def _stats(s: ev.Stats | None) -> str:
    if s is None:
        return "undefined"
    extra = "".join(f", {k} {getattr(s, k)}" for k in ("nan", "inf") if getattr(s, k))
    return f"norm {s.norm:.4g}{extra}"


# --- the event just applied, in words ------------------------------------------------------------


def describe(event: ev.Event, state: EngineState) -> str:
    """One sentence saying what ``event`` did; ``state`` is any state that knows the names."""
    s = state
    e: Any = event
    k = event.kind
    if k == "trace_begin":
        return f"trace begins (format {e.format_version}, devices {', '.join(e.devices)})"
    if k == "trace_end":
        return f"trace ends: {e.status}" + (f" ({e.error})" if e.error else "")
    if k == "thread_start":
        dev = f" for {e.device}" if e.device else ""
        return f"thread {e.tid} '{e.name}' starts ({e.role}{dev})"
    if k == "thread_end":
        return f"thread {thread_label(s, e.tid)} ends"
    if k == "queue_created":
        return f"ready queue {e.queue} '{e.name}' created (device {e.device})"
    if k == "tensor_created":
        name = f" '{e.name}'" if e.name else ""
        return f"leaf tensor {e.tensor}{name} created, shape {tuple(e.shape)}, {e.dtype} on {e.device}"
    if k == "node_created":
        return (f"{display_name(e.node, e.name)} (node {e.node}, seq {seqnr(e.sequence_nr)}) created: "
                f"{e.num_inputs} input(s), {e.num_outputs} next edge(s)")
    if k == "edge_created":
        dst = "None" if e.dst is None else f"{node_label(s, e.dst)} input {e.input_nr}"
        return f"edge {node_label(s, e.src)} slot {e.slot} -> {dst}"
    if k == "task_begin":
        roots = ", ".join(node_label(s, n) for n, _ in e.roots)
        call = "backward" if e.accumulate_grad else "grad"
        return (f"task {e.task} begins on {thread_label(s, e.tid)}: {call} from {roots}, "
                f"reentrant depth {e.reentrant_depth}")
    if k == "task_end":
        return f"task {e.task} ends: {e.status}" + (f" ({e.error})" if e.error else "")
    if k == "dependencies":
        return f"task {e.task} dependencies counted for {len(e.counts)} node(s)"
    if k == "exec_info":
        return f"task {e.task} exec_info: {len(e.needed)} node(s) needed, {len(e.captured)} captured"
    if k == "dependency_decrement":
        return (f"{node_label(s, e.node)} of task {e.task}: {e.remaining} dependenc"
                f"{'y' if e.remaining == 1 else 'ies'} left ({node_label(s, e.by)} ran)")
    if k in ("queue_push", "queue_pop"):
        if e.what == "node":
            what = node_seq_label(s, e.node)
        else:
            what = f"{e.what} task"
        task = f" of task {e.task}" if e.task is not None else ""
        if k == "queue_push":
            return (f"{what} pushed to {queue_label(s, e.queue)}{task}, "
                    f"priority {priority_label(e.priority, e.what)}")
        return f"{thread_label(s, e.tid)} popped {what} from {queue_label(s, e.queue)}{task}"
    if k == "buffer_add":
        src = "the root gradient" if e.producer is None else f"gradient from {node_label(s, e.producer)}"
        if e.mode == "accumulate":
            t = s.tasks.get(e.task)
            b = t.buffers.get(e.node) if t is not None else None
            n = b.slots[e.slot].contributions if b is not None and e.slot < len(b.slots) else 2
            how = f"accumulated into slot {e.slot} ({n} contributions)"
        elif e.mode == "undefined":
            how = f"undefined (None) for slot {e.slot}"
        else:
            how = f"set in slot {e.slot}"
        return f"{src} {how} of {node_label(s, e.node)}'s InputBuffer (task {e.task})"
    if k == "not_ready_park":
        ns = s.nodes.get(e.node)
        filled = f": {ns.filled}/{ns.num_inputs} slot(s) filled" if ns is not None else ""
        return (f"{node_label(s, e.node)} parked in not_ready of task {e.task}{filled}, "
                f"{e.remaining} dependenc{'y' if e.remaining == 1 else 'ies'} missing")
    if k == "not_ready_take":
        return f"{node_label(s, e.node)} leaves not_ready of task {e.task}: all gradients arrived, ready"
    if k == "node_begin":
        return (f"{thread_label(s, e.tid)} runs {node_label(s, e.node)} for task {e.task} "
                f"at depth {e.depth}")
    if k == "node_end":
        how = "finished" if e.status == "ok" else "FAILED"
        return f"{node_label(s, e.node)} {how} on {thread_label(s, e.tid)} (task {e.task})"
    if k == "hook":
        return f"{e.hook} hook {e.name} of {node_label(s, e.node)}"
    if k == "accumulate_grad":
        return f"{node_label(s, e.node)} {e.mode} .grad of tensor {e.tensor} ({_stats(e.after)})"
    if k == "captured_grad":
        at = f"{node_label(s, e.node)} input {e.input_nr}"
        return f"grad() output {e.index} captured at {at} ({_stats(e.stats)})"
    if k == "saved_release":
        return f"{node_label(s, e.node)} released {e.count} saved tensor(s)"
    if k == "callback":
        return f"task {e.task} final callback {e.name}"
    if k == "pool_push":
        return f"task {e.task} handed to the reentrant thread pool (depth {e.depth})"
    if k == "pool_take":
        return f"{thread_label(s, e.tid)} takes task {e.task} from the reentrant pool"
    if k == "error":
        where = f" in {node_label(s, e.node)}" if e.node is not None else ""
        task = f" (task {e.task})" if e.task is not None else ""
        return f"ERROR{where}{task}: {e.type}: {e.message}"
    if k == "anomaly":
        return f"ANOMALY in {node_label(s, e.node)} (task {e.task}): {e.message}"
    return k.replace("_", " ")


# --- why is a node not running ------------------------------------------------------------------


def producers(trace: Any, node: int) -> list[tuple[int, int]]:
    """(producer node, slot) for every edge into ``node`` in the recorded graph."""
    out = []
    for n, info in trace.nodes.items():
        for dst, input_nr in info.next_edges:
            if dst == node:
                out.append((n, input_nr))
    return out


def _where(state: EngineState, ns: NodeState) -> str:
    if ns.state == "queued":
        return f"queued in {queue_label(state, ns.queue)}" if ns.queue is not None else "ready"
    if ns.state == "running":
        return f"running on {thread_label(state, ns.tid)}"
    if ns.state == "parked":
        return f"parked ({ns.filled}/{ns.num_inputs} slots)"
    if ns.state == "arriving":
        return f"receiving a gradient ({ns.filled}/{ns.num_inputs} slots)"
    if ns.state == "ready":
        return "ready, being pushed to a ready queue"
    return ns.state


def why(trace: Any, state: EngineState, node: int) -> list[str]:
    """Why ``node`` is (or is not) running at this step: lines a person can read."""
    use_trace(trace)
    ns = state.nodes.get(node)
    if ns is None:
        return [f"node {node} does not exist yet at step {state.step}"]
    me = node_label(state, node)
    task = state.tasks.get(ns.task) if ns.task is not None else None
    if ns.state == "running":
        return [f"{me} is running on {thread_label(state, ns.tid)} (task {ns.task}, depth {ns.depth})"]
    if ns.state in ("done", "released"):
        return [f"{me} already ran (task {ns.task})"]
    if ns.state == "error":
        errs = [e for e in state.errors if e.node == node]
        msg = f": {errs[-1].type}: {errs[-1].message}" if errs else ""
        return [f"{me} raised{msg}"]
    if ns.state == "pruned":
        return [f"{me} will not run: task {ns.task}'s exec_info does not need it (grad() or inputs=)"]
    if ns.state == "ready" or (ns.state == "queued" and ns.queue is None):
        return [f"{me} has all its gradients and is being pushed to a ready queue"]
    if ns.state == "queued":
        assert ns.queue is not None
        q = state.queues[ns.queue]
        ahead = []
        for e in q.entries:
            if e.node == node and e.task == ns.task:
                break
            ahead.append(e)
        lines = [f"{me} is ready, waiting in {queue_label(state, ns.queue)} '{q.name}' "
                 f"behind {len(ahead)} task(s)"]
        lines += [f"  pops first: {_entry_label(state, e)}" for e in ahead[:10]]
        # A device queue may be declared before its worker exists (owner None): match by device.
        busy = [th for th in state.threads.values() if th.frames and (
            q.owner == th.tid or (th.role == "device_worker" and th.device == q.device))]
        for th in busy:
            running = node_label(state, th.frames[-1].node)
            lines.append(f"  the queue's thread {th.name} is busy running {running}")
        return lines
    # unreached or parked: which gradients are missing, and where their producers are.
    if task is None:
        return [f"{me} is not part of any running task at step {state.step}"]
    if task.status != "running":
        return [f"{me} did not run: task {task.id} ended ({task.status}) before reaching it"]
    left = task.deps.get(node, 0)
    lines = []
    if ns.state == "parked":
        buf = task.buffers.get(node)
        lines.append(f"{me} is parked in not_ready of task {task.id}")
        lines.append(f"  {left} dependenc{'y' if left == 1 else 'ies'} still to arrive")
        if buf is not None:
            for i, slot in enumerate(buf.slots):
                lines.append(f"  slot {i}: {_slot_label(state, slot)}")
    elif ns.state == "arriving":
        lines.append(f"{me} is receiving a gradient in task {task.id} (not parked or queued yet)")
        lines.append(f"  {left} dependenc{'y' if left == 1 else 'ies'} still to arrive")
        buf = task.buffers.get(node)
        if buf is not None:
            for i, slot in enumerate(buf.slots):
                lines.append(f"  slot {i}: {_slot_label(state, slot)}")
    else:
        lines.append(f"{me} has no gradient yet in task {task.id}")
        lines.append(f"  {left} dependenc{'y' if left == 1 else 'ies'} still to arrive")
    buf = task.buffers.get(node)
    arrived: dict[int | None, int] = {}
    if buf is not None:
        for slot in buf.slots:
            for p in slot.producers:
                arrived[p] = arrived.get(p, 0) + 1
    for p, slot_nr in producers(trace, node):
        if p not in task.deps and not any(r == p for r, _ in task.roots):
            continue  # not in this task's graph
        if arrived.get(p, 0) > 0:
            arrived[p] -= 1
            continue
        pns = state.nodes.get(p)
        where = _where(state, pns) if pns is not None else "unknown"
        if pns is not None and pns.state in ("done", "released") and pns.task == task.id:
            where = "it just ran; its gradient is on the way"
        lines.append(f"  waiting for {node_label(state, p)} -> slot {slot_nr}: {where}")
    return lines


def _slot_label(state: EngineState, slot: Any) -> str:
    who = ", ".join("root" if p is None else node_label(state, p) for p in slot.producers)
    if slot.state == "missing":
        return "missing"
    if slot.state == "accumulated":
        return f"accumulated({slot.contributions}) from {who}"
    return f"{slot.state} from {who}"


def _entry_label(state: EngineState, e: QueueEntry) -> str:
    if e.what != "node":
        return f"{e.what} task" + (f" (task {e.task})" if e.task is not None else "")
    return f"{node_seq_label(state, e.node)} task {e.task}, priority {priority_label(e.priority)}"


# --- the state at a step ------------------------------------------------------------------------


def _table(title: str | None, *cols: str) -> Table:
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, expand=False,
              title_style="bold")
    for i, c in enumerate(cols):
        # Only the last column wraps: ids and names stay on one line, details fold.
        last = i == len(cols) - 1
        t.add_column(c, overflow="fold", no_wrap=not last)
    return t


def after_events(step: int, last: ev.Event | None) -> str:
    """The one way every command names a step: "after 40 events (the last: #39 buffer_add)"."""
    if last is None or step == 0:
        return f"after {step} events (nothing applied yet)"
    return f"after {step:,} event{'s' if step != 1 else ''} (the last: #{last.seq} {last.kind})"


def _origin_tag(trace: Any, seq: int) -> str:
    """torchrec: on a trace of real torch, whether a hook observed the event or it was derived."""
    from gradviz.trace.provenance import engine, origin

    return f" ({origin(trace, seq)}, torch {engine(trace)[1]})" if engine(trace)[0] == "torch" else ""


def header(trace: Any, state: EngineState) -> RenderableType:
    """The step and the event that led to it, each wrapped between phrases."""
    total = trace.total_events if hasattr(trace, "total_events") else len(trace.events)  # lazy: no events made
    if state.last is None:
        return Text(f"step {state.step} of {total}  (nothing applied yet)", style="bold")
    e = state.last
    first = Phrases.of(f"step {state.step} of {total}: {after_events(state.step, e)}{_origin_tag(trace, e.seq)} on "
                       f"{thread_label(state, e.tid)}", keep=[thread_label(state, e.tid)])
    labels = [node_label(state, getattr(e, f, None)) for f in ("node", "by", "producer", "src", "dst")
              if isinstance(getattr(e, f, None), int)]
    style = "bold red" if e.kind in ("error", "anomaly") else ""
    return Group(first, Phrases.of(describe(e, state), keep=labels, style=style))


# Events a thread applies while it hands a finished node's gradients on (torch's evaluate_function).
_HANDING_ON = (ev.DependencyDecrement, ev.BufferAdd, ev.NotReadyPark, ev.NotReadyTake, ev.QueuePush)


def _passing_on(state: EngineState, tid: int) -> str | None:
    """What the thread that applied the last event is doing, when that event hands a gradient on."""
    e = state.last
    if e is None or e.tid != tid or type(e) not in _HANDING_ON or getattr(e, "node", None) is None:
        return None
    return f"passing a gradient to {node_label(state, e.node)}"


def threads_view(state: EngineState, task: int | None = None, title: str | None = "Threads",
                 compact: bool = False) -> Table:
    """One row per thread; ``compact`` (narrow screens) keeps only the name and what it is doing."""
    t = _table(title, "thread", "doing") if compact else _table(title, "tid", "name", "role", "depth", "tasks", "doing")
    for th in state.threads.values():
        if task is not None and task not in th.tasks and not any(f.task == task for f in th.frames):
            continue
        if not th.alive:
            doing = Text("ended", style="dim")
        elif th.frames:
            f = th.frames[-1]
            doing = Text(f"running {node_label(state, f.node)}, task {f.task}", style="green")
            if len(th.frames) > 1:
                doing.append(" inside " + ", ".join(node_label(state, x.node) for x in th.frames[-2::-1]))
            if (passing := _passing_on(state, th.tid)) is not None:  # a reentrant backward's root
                doing.append(f"; {passing}")
        elif (passing := _passing_on(state, th.tid)) is not None:
            doing = Text(passing, style="cyan")
        elif th.tasks:
            doing = Text("waiting for work", style="yellow")
        elif th.role == "device_worker":  # a device worker always serves its device's queue
            doing = Text(f"waiting for work on the {th.device} queue", style="yellow")
        else:
            doing = Text("idle", style="dim")
        role = {"device_worker": "device", "reentrant_pool": "pool"}.get(th.role, th.role)
        role += f" {th.device}" if th.device else ""
        # Inside a reentrant backward the thread is at the inner task's depth even between nodes.
        inner = state.tasks.get(th.tasks[-1]) if th.tasks else None
        depth = max(th.depth, inner.reentrant_depth if inner is not None else 0)
        # wrapped between phrases: a node's label and "task 3" stay whole in a narrow column
        labels = [node_label(state, f.node) for f in th.frames]
        if (passing := _passing_on(state, th.tid)) is not None:
            labels.append(passing.removeprefix("passing a gradient to "))
        cell = Phrases.of(doing.plain, keep=labels, style=str(doing.style))
        if compact:
            t.add_row(th.name, cell)
        else:
            t.add_row(str(th.tid), th.name, role, str(depth), ", ".join(str(x) for x in th.tasks) or "-",
                      cell)
    return t


def queues_view(state: EngineState, task: int | None = None, limit: int = 12,
                title: str | None = "Ready queues (in pop order)", compact: bool = False) -> Table:
    if compact:  # id, name and size in one column, for narrow panels
        t = _table(title, "queue (size)", "next to pop")
    else:
        t = _table(title, "queue", "name", "size", "next to pop")
    for q in state.queues.values():
        entries = [e for e in q.entries if task is None or e.task == task]
        lines: RenderableType
        if entries:
            # one entry a line, wrapped between its phrases ("priority (0, 6)" stays whole)
            rows: list[RenderableType] = [Phrases.of(f"{i}. {_entry_label(state, e)}", indent="   ")
                                          for i, e in enumerate(entries[:limit], 1)]
            if len(entries) > limit:
                rows.append(Text(f"... {len(entries) - limit} more"))
            lines = Group(*rows)
        else:
            lines = Text("empty", style="dim")
        if compact:
            t.add_row(f"{q.id} {q.name} ({len(entries)})", lines)
        else:
            t.add_row(str(q.id), q.name, str(len(entries)), lines)
    return t


def _task_summary(state: EngineState, t: TaskState) -> str:
    call = "backward" if t.accumulate_grad else "grad"
    status = t.status + (f" ({t.error})" if t.error else "")
    extra = ", pooled" if t.pooled else ""
    return (f"task {t.id}: {status}, {call}, depth {t.reentrant_depth}, owner "
            f"{thread_label(state, t.owner)}{extra}, outstanding {t.outstanding}, "
            f"{t.executed} node(s) ran")


def tasks_view(state: EngineState, task: int | None = None, limit: int = 20) -> RenderableType:
    parts: list[RenderableType] = []
    ids = [i for i in state.tasks if task is None or i == task]
    finished = [i for i in ids if state.tasks[i].status != "running"]
    running = [i for i in ids if state.tasks[i].status == "running"]
    title = Text("Graph tasks", style="bold")
    parts.append(title)
    if not ids:
        parts.append(Text("  none yet", style="dim"))
    shown_finished = finished[-5:] if task is None else finished
    if len(finished) > len(shown_finished):
        parts.append(Text(f"  ... {len(finished) - len(shown_finished)} earlier task(s) finished"))
    for i in shown_finished:
        t = state.tasks[i]
        style = "red" if t.status == "error" else ""
        parts.append(Phrases.of("  " + _task_summary(state, t), indent="    ", style=style))
    for i in running:
        t = state.tasks[i]
        parts.append(Phrases.of("  " + _task_summary(state, t), indent="    ", style="bold"))
        waiting = t.waiting
        if waiting:
            items = list(waiting.items())
            labels = [node_label(state, n) for n, _ in items[:limit]]
            txt = ", ".join(f"{label} {c}" for label, (_, c) in zip(labels, items))
            more = f", ... {len(items) - limit} more" if len(items) > limit else ""
            parts.append(Phrases.of(f"    dependencies left: {txt}{more}", keep=labels, indent="      "))
        nr = t.not_ready
        if nr:
            parts.append(Text("    not_ready:"))
            for n, b in list(nr.items())[:limit]:
                slots = "; ".join(f"slot {i}: {_slot_label(state, s)}" for i, s in enumerate(b.slots))
                labels = [node_label(state, n), *(node_label(state, p) for x in b.slots for p in x.producers)]
                parts.append(Phrases.of(f"      {node_label(state, n)} [{b.filled}/{len(b.slots)}] {slots}",
                                        keep=labels, indent="        ", style="yellow"))
        if t.captured:
            for idx, c in sorted(t.captured.items()):
                parts.append(Text(f"    captured grad {idx}: {node_label(state, c.node)} input "
                                  f"{c.input_nr} ({_stats(c.stats)})"))
    for i in ids:
        for err in state.tasks[i].errors:
            parts.append(Text(f"  {err.kind.upper()} in event #{err.seq} (step {err.seq + 1}) in "
                              f"{node_label(state, err.node)} (task {err.task}): {err.type}: {err.message}",
                              style="bold red"))
    return Group(*parts)


def nodes_view(state: EngineState, task: int | None = None, limit: int = 30) -> RenderableType:
    """Node states: counts for all nodes, then a table of the nodes of the current task(s)."""
    counts: dict[str, int] = {}
    for ns in state.nodes.values():
        counts[ns.state] = counts.get(ns.state, 0) + 1
    summary = ", ".join(f"{counts[k]} {k}" for k in STATE_STYLE if counts.get(k))
    if task is not None:
        focus = {task}
    else:
        focus = {i for i in state.tasks if state.tasks[i].status == "running"}
        if not focus and len(state.tasks):
            focus = {max(state.tasks)}
    t = _table(f"Nodes ({summary or 'none'})", "node", "name", "state", "task", "detail")
    rows = [ns for ns in state.nodes.values() if ns.task in focus or (not focus and ns.task is None)]
    for ns in rows[:limit]:
        detail = ""
        if ns.state in ("parked", "arriving"):
            detail = f"{ns.filled}/{ns.num_inputs} slots"
        elif ns.state == "ready":
            detail = "being pushed to a ready queue"
        elif ns.state == "queued":
            detail = queue_label(state, ns.queue) if ns.queue is not None else "ready"
        elif ns.state == "running":
            detail = f"{thread_label(state, ns.tid)}, depth {ns.depth}"
        t.add_row(str(ns.id), Text(display_name(ns.id, ns.name)), Text(ns.state, style=STATE_STYLE.get(ns.state, "")),
                  "-" if ns.task is None else str(ns.task), detail)
    if len(rows) > limit:
        t.add_row("...", f"{len(rows) - limit} more", "", "", "")
    return t


def state_view(trace: Any, state: EngineState, task: int | None = None, width: int | None = None) -> Group:
    """Everything at one step: the event, threads, queues, tasks, nodes. Under 100 columns
    (``width``) the threads table keeps only each thread's name and what it is doing, which
    then has the room to say it without cutting a node's name in two."""
    use_trace(trace)
    return Group(
        header(trace, state),
        Text(""),
        threads_view(state, task, compact=width is not None and width < 100),
        queues_view(state, task),
        tasks_view(state, task),
        Text(""),
        nodes_view(state, task),
    )
