"""The interactive stepper: a full-screen view of the engine state, moved one event at a time.

``Stepper`` is the controller: it holds the position and the selection and turns key names
into moves; it never touches the terminal, so tests drive it directly. ``layout(stepper)``
renders it into a rich ``Layout`` with named regions (event, threads, queues, not_ready,
dependencies, graph, footer). ``run_stepper`` is the only part that owns the terminal: cbreak
mode for single keys, restored on every exit path, and a rich ``Live`` on the alternate screen.
"""

from __future__ import annotations

import io
import os
import select
import sys
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.layout import Layout
from rich.panel import Panel
from rich.text import Text

from gradviz.replay import views
from gradviz.replay.state import EngineState, Replayer
from gradviz.replay.why import about_node
from gradviz.replay.why import why as answer_why
from gradviz.trace import events as ev
from gradviz.trace import sites
from gradviz.trace.summary import GradientIn, gradients_into

HELP = [
    ("→ n space", "next event"),
    ("← p", "previous event"),
    ("↓ f  ↑ b", "10 events forward / back"),
    ("> <", "next / previous node execution"),
    ("Home End", "first / last step"),
    ("g", "go to step (type a number, Enter)"),
    ("e E", "next / previous error or NaN"),
    ("/", "find a node by name or id (Enter; again to cycle)"),
    ("a", "go to where the selected node starts"),
    ("w", "why is the selected node not running? + gradviz why"),
    ("c esc", "clear selection (follow the current event)"),
    ("[ ]", "scroll the dependency counts"),
    ("?", "help"),
    ("q", "quit"),
]

KEYS_LINE = "n/p ±1  f/b ±10  >/< node  g step  e error  / find  w why  ? help  q quit"


def _is_problem(e: ev.Event) -> bool:
    if type(e) is ev.Error or type(e) is ev.Anomaly:
        return True
    if type(e) is ev.BufferAdd or type(e) is ev.CapturedGrad:
        return e.stats is not None and e.stats.nan > 0
    if type(e) is ev.AccumulateGradUpdate:
        return e.after.nan > 0
    return False


class Stepper:
    """Position, selection and modes of the stepper; ``key(name)`` applies one key press."""

    def __init__(self, trace: Any, start: int = 0, task: int | None = None,
                 replayer: Replayer | None = None) -> None:
        self.trace = trace
        views.use_trace(trace)  # AccumulateGrad nodes show their leaf's name in every panel
        self.task = task
        self.replayer = replayer or Replayer(trace)
        self.total = len(trace.events)
        self.step = max(0, min(start, self.total))
        self.selected: int | None = None  # None: follow the node of the current event
        self.prompt: str | None = None  # "g" or "/" while typing
        self.typed = ""
        self.message = ""
        self.panel: str | None = None  # "help" or "why" in the graph region
        self.running = True
        self._find_last: tuple[str, int] | None = None
        self.deps_offset = 0  # the first line of the dependency counts shown
        # a torch trace: the seqs its recorder derived rather than observed; None: gradviz's engine
        self.derived: frozenset[int] | None = None
        head = trace.head(8) if hasattr(trace, "head") else trace.events[:8]
        if any(type(e) is ev.EngineInfo and e.engine == "torch" for e in head):
            self.derived = frozenset(n for d in trace.of_kind(ev.Derived) for n in d.events)  # type: ignore[attr-defined]
        self._state: EngineState | None = None

    # -- what is shown
    @property
    def state(self) -> EngineState:
        if self._state is None or self._state.step != self.step:
            self._state = self.replayer.state_at(self.step)
        return self._state

    def focus(self) -> int | None:
        """The selected node, or the node the current event is about."""
        if self.selected is not None:
            return self.selected
        last = self.state.last
        node = getattr(last, "node", None)
        return node if isinstance(node, int) else None

    # -- moves
    def go(self, step: int) -> None:
        if step > self.total:
            self.message = (f"already at the last step ({self.total:,} events)" if self.step == self.total
                            else f"step {step:,} is past the end: at the last step, {self.total:,}")
        elif step < 0:
            self.message = "already at step 0" if self.step == 0 else f"step {step} is before the start: at step 0"
        self.step = max(0, min(step, self.total))
        if self.panel == "why":
            self.panel = None

    def _seek(self, forward: bool, pred: Any, what: str) -> None:
        events = self.trace.events
        rng = range(self.step, self.total) if forward else range(self.step - 2, -1, -1)
        for i in rng:
            if pred(events[i]):
                self.go(i + 1)
                return
        self.message = f"no {'next' if forward else 'previous'} {what}"

    def _node_run(self, e: ev.Event) -> bool:
        return type(e) is ev.NodeBegin and (self.task is None or e.task == self.task)

    def find(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        nodes = self.trace.nodes
        if text.isdigit():
            matches = [int(text)] if int(text) in nodes else []
        else:
            low = text.lower()
            # A leaf's name finds its AccumulateGrad node ("fc1.weight").
            shown = {n: views.display_name(n, i.name) for n, i in nodes.items()}
            # Exact name, then a case-sensitive part ("Mul" is not AccumulateGrad), then any case.
            matches = (
                [n for n, i in nodes.items() if i.name == text or shown[n] == text]
                or [n for n in nodes if text in shown[n]]
                or [n for n in nodes if low in shown[n].lower()]
            )
        if not matches:
            self.message = f"no node matches {text!r}"
            return
        k = 0
        if self._find_last is not None and self._find_last[0] == text:
            k = (self._find_last[1] + 1) % len(matches)
        self._find_last = (text, k)
        self.selected = matches[k]
        ns = self.state.nodes.get(self.selected)
        where = ns.state if ns is not None else "not created yet"
        shown = views.display_name(self.selected, nodes[self.selected].name)
        self.message = (f"selected {shown} (node {self.selected}), {where}"
                        f"  [{k + 1}/{len(matches)}]  w: why, a: go to its start")

    def key(self, k: str) -> None:
        """Apply one key (a character, or a name like 'right', 'enter', 'backspace', 'esc')."""
        self.message = ""
        if self.prompt is not None:
            self._prompt_key(k)
            return
        if k in ("q", "Q", "ctrl-c"):
            self.running = False
        elif k in ("right", "n", " ", "l"):
            self.go(self.step + 1)
        elif k in ("left", "p", "h"):
            self.go(self.step - 1)
        elif k in ("down", "f", "pgdn"):
            self.go(self.step + 10)
        elif k in ("up", "b", "pgup"):
            self.go(self.step - 10)
        elif k == ">":
            self._seek(True, self._node_run, "node execution")
        elif k == "<":
            self._seek(False, self._node_run, "node execution")
        elif k in ("home",):
            self.go(0)
        elif k in ("end",):
            self.go(self.total)
        elif k == "e":
            self._seek(True, _is_problem, "error or NaN")
        elif k == "E":
            self._seek(False, _is_problem, "error or NaN")
        elif k in ("g", "/"):
            self.prompt, self.typed = k, ""
        elif k == "a":
            node = self.focus()
            if node is None:
                self.message = "no node selected (/ to find one)"
            else:
                self._seek(True, lambda e: type(e) is ev.NodeBegin and e.node == node, "start of that node")
                if self.message:
                    self._seek(False, lambda e: type(e) is ev.NodeBegin and e.node == node,
                               "start of that node")
        elif k == "w":  # the selected node's answer, or with none the run's first problem
            self.panel = None if self.panel == "why" else "why"
        elif k == "?":
            self.panel = None if self.panel == "help" else "help"
        elif k in ("[", "]"):  # the dependency counts, when more than fit (the panel clamps it)
            self.deps_offset = max(0, self.deps_offset + (5 if k == "]" else -5))
        elif k in ("c", "esc"):
            self.selected, self.panel = None, None
        else:
            self.message = f"unknown key {k!r}: ? for help"

    def _prompt_key(self, k: str) -> None:
        if k == "esc" or k == "ctrl-c":
            self.prompt = None
        elif k == "backspace":
            self.typed = self.typed[:-1]
        elif k == "enter":
            kind, text = self.prompt, self.typed
            self.prompt = None
            if kind == "g":
                try:
                    self.go(int(text))
                except ValueError:
                    self.message = f"not a step number: {text!r}"
            else:
                self.find(text)
        elif len(k) == 1 and k.isprintable():
            self.typed += k


# --- rendering ---------------------------------------------------------------------------------


def _event_panel(s: Stepper) -> Panel:
    st = s.state
    head = Text(f"step {st.step}/{s.total}", style="bold")
    if st.last is not None:
        e = st.last
        # "step N" is the state after N events; the last of them is event #N-1 (shown here).
        head.append(f"  last event #{e.seq} {e.kind} on {views.thread_label(st, e.tid)}{_origin(s, e.seq)}\n",
                    style="dim")
        head.append(views.describe(e, st), style="bold red" if _is_problem(e) else "bold")
        context = _problem_context(s, e) if _is_problem(e) else None
        if context:
            head.append(f"\n{context}")
    else:
        head.append("  nothing applied yet: press → to apply the first event")
    return Panel(head, title="event", title_align="left")


def _origin(s: Stepper, seq: int) -> str:
    """" (observed)" (a hook saw it) or " (derived)" (the recorder inferred it) for an event of a
    torch trace, as its ``derived`` events list them; nothing for gradviz's engine, which
    reports each of its steps itself."""
    derived = s.derived
    if derived is None:
        return ""
    return " (derived)" if seq in derived else " (observed)"


def _problem_node(e: Any) -> int | None:
    """The node a problem event is about: the one that raised or made the NaN."""
    if type(e) is ev.BufferAdd:
        return e.producer if e.producer is not None else e.node
    return getattr(e, "node", None)


def _problem_context(s: Stepper, e: Any) -> str | None:
    """For an error or a NaN: the forward line that created the node, and the gradients the
    node had received by then (their statistics), as ``gradviz info`` lists them."""
    node = _problem_node(e)
    if node is None or node not in s.trace.nodes:
        return None
    info = s.trace.nodes[node]
    source = sites.at(info.source, info.columns, short=False)
    task = getattr(e, "task", None)
    grads = gradients_into(s.trace, node, task, e.seq, lambda n: None) if task is not None else []
    parts = []
    own = e.after if type(e) is ev.AccumulateGradUpdate else getattr(e, "stats", None)
    if own is not None:  # the gradient this event carries (a NaN one)
        parts.append("this gradient: " + GradientIn(0, None, own.norm, own.min, own.max, own.nan, own.inf).text()
                     .removeprefix("slot 0: "))
    parts.append(f"{views.node_label(s.state, node)} created at {source}" if source else
                 f"{views.node_label(s.state, node)}: no forward line recorded")
    if grads:
        parts.append("gradient in: " + "; ".join(g.text() for g in grads))
    return "; ".join(parts)


def _line(text: str, style: str = "") -> Text:
    """One line of a panel: cut with an ellipsis at the panel's edge, never wrapped, so a node
    and its state stay on one line in a narrow panel (80 columns: two panels of 36)."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _not_ready_panel(s: Stepper) -> RenderableType:
    st = s.state
    lines: list[RenderableType] = []
    for tid in st.tasks:
        t = st.tasks[tid]
        if s.task is not None and t.id != s.task:
            continue
        for n, b in t.not_ready.items():
            lines.append(_line(f"{views.node_label(st, n)} [{b.filled}/{len(b.slots)}] task {t.id}", "yellow"))
            for i, slot in enumerate(b.slots):
                lines.append(_line(f"  slot {i}: {views._slot_label(st, slot)}"))
    return Panel(Group(*lines) if lines else Text("empty", style="dim"), title="not_ready buffers",
                 title_align="left")


def _queue_lines(s: Stepper, limit: int = 8) -> RenderableType:
    st = s.state
    txt = Text()
    for q in st.queues.values():
        entries = [e for e in q.entries if s.task is None or e.task == s.task]
        txt.append(f"{q.id} {q.name} ({len(entries)})", style="bold")
        txt.append("\n" if entries else "  empty\n", style="dim")
        for i, e in enumerate(entries[:limit], 1):
            txt.append(f"  {i}. {views._entry_label(st, e)}\n")
        if len(entries) > limit:
            txt.append(f"  ... {len(entries) - limit} more\n", style="dim")
    txt.no_wrap, txt.overflow = True, "ellipsis"
    return txt


def _deps_panel(s: Stepper, rows: int | None = None) -> RenderableType:
    """Every running task's nodes still waiting, with their counts; ``rows``: the lines that
    fit, past which the panel shows a window that [ and ] move (``Stepper.deps_offset``)."""
    st = s.state
    lines: list[RenderableType] = []
    for tid in st.tasks:
        t = st.tasks[tid]
        if t.status != "running" or (s.task is not None and t.id != s.task):
            continue
        lines.append(_line(f"task {t.id} (depth {t.reentrant_depth}): outstanding {t.outstanding}", "bold"))
        waiting = t.waiting
        for n, c in waiting.items():
            lines.append(_line(f"   {views.node_label(st, n)}: {c}"))
        if not waiting:
            lines.append(_line("   all dependencies met", "dim"))
    title = "dependency counts"
    if rows is not None and len(lines) > rows >= 2:
        fit = rows - 1  # the last line says where the window is
        s.deps_offset = max(0, min(s.deps_offset, len(lines) - fit))
        a = s.deps_offset
        lines = [*lines[a : a + fit],
                 _line(f"lines {a + 1}-{a + fit} of {len(lines)}: [ and ] scroll", "dim")]
        title = "dependency counts ([ ] scroll)"
    return Panel(Group(*lines) if lines else Text("no running task", style="dim"), title=title, title_align="left")


def _why_panel(s: Stepper, st: EngineState, node: int | None) -> RenderableType:
    """w: why the node is (not) running at this step, and gradviz why's answer about it (the
    error it raised, the NaN it made, its leaf's missing .grad); with no node, the run's first
    problem. The culprit line is shown in bold."""
    txt = Text()
    if node is not None:
        txt.append("\n".join(views.why(s.trace, st, node)) + "\n")
    answer = about_node(s.trace, node) if node is not None else answer_why(s.trace)
    if answer is not None and answer.reason not in ("no_problem", "all_finite", "no_error", "has_grad"):
        txt.append("\n" if node is not None else "")
        txt.append(answer.reason, style="bold red")
        if answer.where:
            txt.append(" at ")
            txt.append(answer.where.rsplit("/", 1)[-1], style="bold")
        if answer.node and answer.node_id != node:
            txt.append(f"  ({answer.node})")
        txt.append("\n" + answer.text)
    elif node is None:
        txt.append("no problem found: no error, no NaN/Inf, no leaf without .grad")
    title = f"why: {views.node_label(st, node)}" if node is not None else "why: the first problem"
    return Panel(txt, title=Text(title), title_align="left")  # a Text: recorded names are never markup


def _graph_panel(s: Stepper) -> RenderableType:
    st = s.state
    if s.panel == "help":
        txt = Text()
        for keys, what in HELP:
            txt.append(f"{keys:>12}  ", style="bold")
            txt.append(f"{what}\n")
        return Panel(txt, title="help", title_align="left")
    node = s.focus()
    if s.panel == "why":
        return _why_panel(s, st, node)
    if node is None or node not in s.trace.nodes:
        return Panel(Text("no node in focus (/ to find one)", style="dim"), title="graph", title_align="left")
    txt = Text()
    later = 0
    for p, slot in views.producers(s.trace, node):
        ps = st.nodes.get(p)
        if ps is None:  # made by a later forward: not part of the graph yet
            later += 1
            continue
        txt.append(f"  {views.node_label(st, p)} ", style="")
        txt.append(ps.state if ps else "not created", style=views.STATE_STYLE.get(ps.state if ps else "", ""))
        txt.append(f"  -> slot {slot}\n")
    if later:
        txt.append(f"  +{later} later (created after this step)\n", style="dim")
    ns = st.nodes.get(node)
    state = ns.state if ns is not None else "not created"
    txt.append(f"* {views.node_label(st, node)} ", style="bold")
    txt.append(state, style=views.STATE_STYLE.get(state, ""))
    if ns is not None and ns.state in ("parked", "arriving"):
        txt.append(f" [{ns.filled}/{ns.num_inputs}]")
    txt.append("\n")
    for dst, input_nr in s.trace.nodes[node].next_edges:
        if dst is None:
            txt.append("    -> None\n", style="dim")
            continue
        ds = st.nodes.get(dst)
        txt.append(f"    -> {views.node_label(st, dst)} slot {input_nr} ")
        txt.append(ds.state if ds else "not created", style=views.STATE_STYLE.get(ds.state if ds else "", ""))
        txt.append("\n")
    sel = " (selected)" if s.selected is not None else ""
    txt.no_wrap, txt.overflow = True, "ellipsis"
    return Panel(txt, title=f"graph around node {node}{sel}", title_align="left")


def _footer(s: Stepper) -> RenderableType:
    if s.prompt is not None:
        label = "go to step: " if s.prompt == "g" else "find node: "
        return Text(label + s.typed + "█", style="bold")
    if s.message:
        return Text(s.message, style="yellow")
    return Text(KEYS_LINE, style="dim")


def layout(s: Stepper, width: int = 160, height: int = 50) -> Layout:
    """The full screen (``width`` x ``height``), as a Layout with named regions.

    The threads go full width at the top with a row each, so every thread and what it is doing
    shows even at 80x24; the other panels share what is left. The help takes the whole body.
    """
    root = Layout(name="root")
    event = _event_panel(s)
    # as many rows as the event's lines take (an error's forward line and gradients too), but
    # at least what a wrapped event needs and never more than a third of the screen
    measure = Console(file=io.StringIO(), width=max(width - 4, 20), markup=False, emoji=False)
    wanted = 2 + len(measure.render_lines(event.renderable, pad=False))
    ev_size = max(4 if width >= 120 else 5, min(wanted, height // 3))
    root.split_column(
        Layout(event, name="event", size=ev_size),
        Layout(name="body"),
        Layout(_footer(s), name="footer", size=1),
    )
    if s.panel == "help":
        root["body"].update(_graph_panel(s))
        return root
    st = s.state
    threads = views.threads_view(st, s.task, title=None, compact=width < 120)
    threads.show_edge = False  # no blank top and bottom lines: every row counts at 80x24
    rows = len(threads.rows) + 4  # header, rule, borders
    room = height - ev_size - 1
    root["body"].split_column(
        Layout(Panel(threads, title="threads", title_align="left"), name="threads", size=min(rows, max(room - 6, 4))),
        Layout(name="panels"),
    )
    queues = Layout(Panel(views.queues_view(st, s.task, title=None, compact=True),
                          title="ready queues (next to pop first)", title_align="left"), name="queues")
    if width < 120:  # a queue's name above its entries: a two-column table leaves them ~20 columns
        queues.update(Panel(_queue_lines(s), title="ready queues (next to pop first)", title_align="left"))
    if width < 120 or room - rows < 16:  # small screen: two panels side by side, the rest folded in
        root["panels"].split_row(
            Layout(name="left", ratio=1), Layout(_graph_panel(s), name="graph", ratio=1),
        )
        queues.ratio = 3  # a queue entry wraps in a narrow panel: give it the rows
        root["left"].split_column(queues, Layout(_not_ready_panel(s), name="not_ready", ratio=2))
        return root
    root["panels"].split_row(Layout(name="left", ratio=1), Layout(name="right", ratio=1))
    root["left"].split_column(queues, Layout(_not_ready_panel(s), name="not_ready"))
    panels_h = room - min(rows, max(room - 6, 4))
    root["right"].split_column(
        Layout(_deps_panel(s, rows=panels_h // 2 - 2), name="dependencies"),
        Layout(_graph_panel(s), name="graph"),
    )
    return root


# --- the terminal ------------------------------------------------------------------------------

_ESCAPES = {
    "\x1b[A": "up", "\x1b[B": "down", "\x1b[C": "right", "\x1b[D": "left",
    "\x1bOA": "up", "\x1bOB": "down", "\x1bOC": "right", "\x1bOD": "left",
    "\x1b[H": "home", "\x1b[F": "end", "\x1bOH": "home", "\x1bOF": "end",
    "\x1b[1~": "home", "\x1b[4~": "end", "\x1b[7~": "home", "\x1b[8~": "end",
    "\x1b[5~": "pgup", "\x1b[6~": "pgdn",
}


def parse_keys(data: str) -> list[str]:
    """Split raw terminal input into key names."""
    keys: list[str] = []
    i = 0
    while i < len(data):
        c = data[i]
        if c == "\x1b":
            for seq, name in _ESCAPES.items():
                if data.startswith(seq, i):
                    keys.append(name)
                    i += len(seq)
                    break
            else:
                # An unknown sequence: skip it whole so its bytes do not read as keys.
                j = i + 1
                if j < len(data) and data[j] in "[O":
                    j += 1
                    while j < len(data) and not (data[j].isalpha() or data[j] == "~"):
                        j += 1
                    keys.append("unknown")
                    i = j + 1
                else:
                    keys.append("esc")
                    i += 1
            continue
        if c in "\r\n":
            keys.append("enter")
        elif c in "\x7f\x08":
            keys.append("backspace")
        elif c == "\x03":
            keys.append("ctrl-c")
        else:
            keys.append(c)
        i += 1
    return keys


def run_stepper(trace: Any, start: int = 0, task: int | None = None) -> None:
    """Run the stepper on the terminal until q. The terminal is restored however it ends."""
    import termios
    import tty

    from rich.live import Live

    stepper = Stepper(trace, start, task)
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    console = Console(markup=False, emoji=False)  # recorded text is never markup (a thread named "loader[/]")
    try:
        tty.setcbreak(fd)
        with Live(layout(stepper, *console.size), console=console, screen=True, auto_refresh=False,
                  redirect_stdout=False, redirect_stderr=False) as live:
            size = console.size
            while stepper.running:
                ready, _, _ = select.select([fd], [], [], 0.5)
                if not ready:
                    if console.size != size:  # the terminal was resized: draw again
                        size = console.size
                        live.update(layout(stepper, *size), refresh=True)
                    continue
                data = os.read(fd, 1024).decode("utf-8", "replace")
                if not data:
                    break  # stdin closed
                for k in parse_keys(data):
                    stepper.key(k)
                    if not stepper.running:
                        break
                live.update(layout(stepper, *console.size), refresh=True)
    except KeyboardInterrupt:
        pass
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
