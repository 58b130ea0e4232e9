"""Answers to the questions users bring about a recorded run: why is NAME's ``.grad`` None,
where did the first NaN/Inf come from, what caused the error. A pure function of the events
(the forward side's included): it works the same on a trace of gradviz's engine or of torch's.

Each answer names a reason, the line of the user's code that causes it (``where``, never a
gradviz or torch frame), the node or tensor involved, and what to do about it::

    trace = gradviz.load("run.trace.json")
    a = trace.why(grad="w")      # or why(nan=True), why(error=True), why() for the first problem
    a.reason, a.where, a.text

Reasons (``REASONS``): for --grad detached, no_grad, unused, pruned, not_leaf, reset,
none_gradients (and not_requires_grad, has_grad); for --nan non_finite_forward,
non_finite_backward; for --error inplace, no_grad_fn, freed, unused_parameters (by a rule in
``ERROR_RULES``, which the distributed recording adds) and error (any other).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

from gradviz.trace import events as ev
from gradviz.trace import sites
from gradviz.trace.ddp import unused_parameters  # ddp
from gradviz.trace.model import ANSWERERS

REASONS = {
    "grad": ("detached", "no_grad", "unused", "pruned", "not_leaf", "reset", "none_gradients", "not_requires_grad",
             "checkpoint_no_grad", "broadcast_loss", "has_grad", "no_problem"),
    "nan": ("non_finite_forward", "non_finite_backward", "diverged", "all_finite"),
    "error": ("inplace", "no_grad_fn", "freed", "unused_parameters", "leaf_inplace", "non_scalar_backward",
              "view_inplace", "unused_input", "inference_tensor", "bad_gradient", "numpy_requires_grad",
              "dtype_mismatch", "device_mismatch", "error", "no_error"),
}


class WhyError(ValueError):
    """The question cannot be asked of this trace (an unknown tensor name, say): one line."""


@dataclass(frozen=True)
class Answer:
    question: str  # "grad", "nan" or "error"
    reason: str  # one of REASONS[question]
    where: str | None  # "file.py:LINE" of the user's code that causes it
    node: str | None  # the backward node involved (its name), if any
    tensor: str | None  # the tensor involved (the user's name for it, or what made it), if any
    text: str  # one or two sentences the user can act on
    node_id: int | None = None  # the node's id in the trace (render highlights it)
    seq: int | None = None  # the event the answer rests on

    def to_json(self) -> dict[str, Any]:
        """The CLI's --json object."""
        d = asdict(self)
        return {k: d[k] for k in ("question", "reason", "where", "node", "tensor", "text")}

    def __str__(self) -> str:
        head = f"{self.reason}"
        if self.where:
            head += f" at {_shown(self.where)}"
        return f"{head}\n{self.text}"


def _shown(where: str) -> str:
    """A file:line for the terminal: relative to the current folder when under it (a script's
    code is named by its absolute path, as python names it)."""
    if os.path.isabs(where):
        try:
            rel = os.path.relpath(where)
        except ValueError:  # another drive (Windows)
            return where
        if not rel.startswith(os.pardir):
            return rel
    return where


def _short(where: str | None) -> str:
    """A source for a sentence: its file's base name and line."""
    if not where:
        return "an unknown line"
    path, _, line = where.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}"


def _where(x: Any) -> str | None:
    """An answer's ``where``: the "file:line" of a forward op or node (its column and text are in
    the answer's sentence: ``where`` keeps the CLI's JSON contract, DESIGN.md)."""
    return x.source if x is not None else None


def _said(x: Any) -> str:
    """A forward op's or node's place for a sentence: base name, line, column, and the op's own
    text where the file is there (``m.py:13:25 (`F.relu(self.fc1(x))`)``): several ops on one line
    told apart."""
    return (sites.at(x.source, x.columns) if x is not None else None) or "an unknown line"


class Facts:
    """The trace's events, indexed for the questions (built once per trace)."""

    def __init__(self, trace: Any):
        self.trace = trace
        of = trace.of_kind
        self.ops: list[ev.ForwardOp] = of(ev.ForwardOp)  # type: ignore[assignment]
        self.bumps: list[ev.VersionBump] = of(ev.VersionBump)  # type: ignore[assignment]
        self.modes: list[ev.GradMode] = of(ev.GradMode)  # type: ignore[assignment]
        self.resets: list[ev.GradReset] = of(ev.GradReset)  # type: ignore[assignment]
        self.grad_reads: list[ev.NonLeafGradRead] = of(ev.NonLeafGradRead)  # type: ignore[assignment]
        self.warnings: list[ev.WarningShown] = of(ev.WarningShown)  # type: ignore[assignment]
        self.detaches: list[ev.Detach] = of(ev.Detach)  # type: ignore[assignment]
        self.calls: list[ev.BackwardCall] = of(ev.BackwardCall)  # type: ignore[assignment]
        self.at_end: list[ev.TensorAtEnd] = of(ev.TensorAtEnd)  # type: ignore[assignment]
        self.errors: list[ev.Error] = of(ev.Error)  # type: ignore[assignment]
        self.nodes = trace.nodes
        self.creator: dict[int, ev.ForwardOp] = {}
        for op in self.ops:
            if op.output is not None:
                self.creator.setdefault(op.output, op)
        self.op_of_node = {op.grad_fn: op for op in self.ops if op.grad_fn is not None}
        self.names: dict[int, str] = {}
        for t in self.at_end:
            self.names.setdefault(t.tensor, t.name)
        for tc in of(ev.TensorCreated):
            if tc.name:
                self.names.setdefault(tc.tensor, tc.name)
        self.accs: dict[int, list[int]] = {}
        for n in self.nodes.values():
            if n.tensor is not None:
                self.accs.setdefault(n.tensor, []).append(n.id)

    @cached_property
    def tasks(self) -> list[ev.TaskBegin]:
        return [t.begin for t in self.trace.tasks.values()]

    @cached_property
    def call_of_task(self) -> dict[int, ev.BackwardCall]:
        """Each user-level task's backward()/grad() call: the last call on its thread before it."""
        out: dict[int, ev.BackwardCall] = {}
        last: dict[int, ev.BackwardCall] = {}
        merged = sorted([*self.calls, *self.tasks], key=lambda e: e.seq)
        for e in merged:
            if isinstance(e, ev.BackwardCall):
                last[e.tid] = e
            elif e.reentrant_depth == 0 and e.tid in last:
                out[e.task] = last.pop(e.tid)
        return out

    @cached_property
    def reached(self) -> dict[int, set[int]]:
        """task -> the nodes reachable from its roots (its dependency counts' nodes, and the roots)."""
        out: dict[int, set[int]] = {t.task: {n for n, _ in t.roots} for t in self.tasks}
        for d in self.trace.of_kind(ev.Dependencies):
            out.setdefault(d.task, set()).update(n for n, _ in d.counts)
        return out

    @cached_property
    def needed(self) -> dict[int, set[int]]:
        """task -> the nodes its exec_info says run (only tasks with grad()/inputs=)."""
        return {e.task: set(e.needed) for e in self.trace.of_kind(ev.ExecInfo)}

    @cached_property
    def ran(self) -> dict[int, list[ev.NodeBegin]]:
        out: dict[int, list[ev.NodeBegin]] = {}
        for e in self.trace.of_kind(ev.NodeBegin):
            out.setdefault(e.node, []).append(e)
        return out

    @cached_property
    def buffer_adds(self) -> list[ev.BufferAdd]:
        return self.trace.of_kind(ev.BufferAdd)  # type: ignore[return-value]

    @cached_property
    def updates(self) -> dict[int, list[ev.AccumulateGradUpdate]]:
        out: dict[int, list[ev.AccumulateGradUpdate]] = {}
        for e in self.trace.of_kind(ev.AccumulateGradUpdate):
            out.setdefault(e.tensor, []).append(e)
        return out

    @cached_property
    def harmful(self) -> bool:
        """Whether a NaN/Inf reached what training uses: a tensor backward was called on, a gradient,
        or a .grad at the end. An Inf that a softmax or a mask turns back into numbers (attention's
        masked_fill(-inf)) reaches none of them."""
        for c in self.calls:
            for t in c.tensors:
                op = self.creator.get(t)
                if op is not None and op.finite is False:
                    return True
        if any(_bad(b.stats) for b in self.buffer_adds):
            return True
        if any(_bad(u.after) for us in self.updates.values() for u in us):
            return True
        return any(t.grad == "nonfinite" for t in self.at_end)

    def call_before(self, seq: int) -> ev.BackwardCall | None:
        """The last backward()/grad() call the program made before event ``seq``."""
        calls = [c for c in self.calls if c.seq < seq]
        return calls[-1] if calls else None

    def node_name(self, node: int | None) -> str | None:
        info = self.nodes.get(node) if node is not None else None
        return info.name if info is not None else None

    def label(self, tensor: int | None) -> str | None:
        """The user's name for a tensor, else what made it ("the output of mul")."""
        if tensor is None:
            return None
        name = self.names.get(tensor)
        if name:
            return name
        op = self.creator.get(tensor)
        return f"the output of {op.op}" if op is not None else None

    def block_of(self, e: ev.Event) -> ev.GradMode | None:
        """The grad-mode block (its enter event) open on e's thread when e happened."""
        stack: list[ev.GradMode] = []
        for m in self.modes:
            if m.seq > e.seq:
                break
            if m.tid != e.tid:
                continue
            if m.enter:
                stack.append(m)
            elif stack:
                stack.pop()
        return stack[-1] if stack else None


# -- the name a question asks about -------------------------------------------------------


def find_tensor(facts: Facts, name: str) -> tuple[int, ev.TensorAtEnd | None]:
    """The tensor a --grad NAME means: a variable or module path (with or without the model's
    variable in front), as render labels leaves."""
    cands = [t for t in facts.at_end if t.name == name]
    if not cands:
        cands = [t for t in facts.at_end if t.name.endswith("." + name)]
    if cands:
        return cands[0].tensor, cands[0]
    named = [tid for tid, n in facts.names.items() if n == name or n.endswith("." + name)]
    if named:
        return named[0], None
    if "." in name:  # the model's variable in front of a module path the trace names without it
        try:
            return find_tensor(facts, name.split(".", 1)[1])
        except WhyError:
            pass
    known = sorted({t.name for t in facts.at_end} | set(facts.names.values()))
    hint = f"; named tensors: {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}" if known else ""
    raise WhyError(f"no tensor named {name!r} in the trace{hint}")


# -- --grad NAME ------------------------------------------------------------------------------


def _taint(facts: Facts, tensor: int) -> set[int]:
    """The tensors computed from ``tensor`` in the forward (through recorded ops)."""
    reach = {tensor}
    for op in facts.ops:  # in seq order: an op's inputs were made before it
        if op.output is not None and any(i in reach for i in op.inputs):
            reach.add(op.output)
    return reach


def why_grad(facts: Facts, name: str) -> Answer:
    tensor, at = find_tensor(facts, name)
    return _why_grad(facts, tensor, at, name)


def _why_grad(facts: Facts, tensor: int, at: ev.TensorAtEnd | None, name: str) -> Answer:
    q = "grad"

    def answer(reason: str, where: str | None, text: str, node: int | None = None, seq: int | None = None) -> Answer:
        return Answer(q, reason, where, facts.node_name(node), name, text, node, seq)

    if at is not None and at.grad in ("nonzero", "nonfinite"):
        extra = " (it holds NaN/Inf: ask --nan)" if at.grad == "nonfinite" else ""
        return answer("has_grad", None, f"{name}.grad is not None after the run{extra}.")
    read = next((r for r in facts.grad_reads if r.tensor == tensor), None)
    if at is not None and not at.leaf or read is not None:
        op = facts.creator.get(tensor)
        where = _where(op) if op is not None else None
        made = f"`{op.op}` at {_said(op)}" if op is not None else "an op"
        seen = f" (its .grad read at {_short(read.source)} gave None)" if read is not None else ""
        var = name if name.replace(".", "_").isidentifier() else None  # a variable: the fix names it
        fix = (f"To read its gradient, call {var}.retain_grad() before backward; if it is meant as a parameter, "
               f"make it a leaf (e.g. `{var} = (torch.randn(...) * 0.1).requires_grad_()`)." if var is not None else
               "To read its gradient, call .retain_grad() on it before backward, or read .grad of the leaf it was "
               "computed from.")
        subject = name if var is not None or op is None else "This tensor"
        return answer(
            "not_leaf", where,
            f"{subject} is the result of {made}, not a leaf, and autograd keeps .grad only on leaves{seen}. {fix}",
            op.grad_fn if op is not None else None, op.seq if op is not None else None,
        )
    updates = facts.updates.get(tensor, [])
    if updates:
        last = updates[-1]
        resets = [r for r in facts.resets if r.tensor == tensor and r.seq > last.seq]
        if resets:
            r = resets[0]
            what = "to None" if r.how == "none" else "to zeros"
            return answer(
                "reset", r.source,
                f"{name} got its gradient from the backward, then its .grad was set back {what} at "
                f"{_short(r.source)} (zero_grad() or `.grad = None`). Read .grad before that line, or move "
                "zero_grad() to the start of the step.", last.node, r.seq,
            )
        if at is not None and at.grad == "zero":
            return answer("none_gradients", None, f"{name}.grad holds zeros: every gradient that reached it was zero.",
                          last.node, last.seq)
    accs = set(facts.accs.get(tensor, []))
    # The backward calls that reached the leaf's AccumulateGrad
    for task in facts.tasks:
        if task.reentrant_depth != 0 or not (accs & facts.reached.get(task.task, set())):
            continue
        call = facts.call_of_task.get(task.task)
        where = call.source if call is not None else None
        acc = next(iter(accs & facts.reached[task.task]))
        needed = facts.needed.get(task.task)
        if not task.accumulate_grad:
            return answer(
                "pruned", where,
                f"autograd.grad() at {_short(where)} returns the gradients it computes and never writes .grad: "
                f"take {name}'s gradient from its result, or call backward() instead.", acc, task.seq,
            )
        if needed is not None and acc not in needed:
            return answer(
                "pruned", where,
                f"backward(inputs=...) at {_short(where)} left {name} out of its inputs, so its .grad was not "
                f"computed. Add {name} to inputs=, or leave inputs= out.", acc, task.seq,
            )
        if facts.ran.get(acc):
            adds = [b for b in facts.buffer_adds if b.node == acc and b.task == task.task]
            if adds and all(b.mode == "undefined" for b in adds):
                prod = adds[0].producer
                info = facts.nodes.get(prod)
                return answer(
                    "none_gradients", _where(info),
                    f"Every gradient reaching {name}'s AccumulateGrad was None: {facts.node_name(prod) or 'a node'} "
                    f"(from {_said(info)}) returned None for it (a custom Function's backward returning None, or "
                    "a hook). Return a gradient for that input.", acc, adds[0].seq,
                )
    # Never reached by a backward: what cut it off, first in the program
    shown = _warned(facts, "checkpoint_no_grad")
    if shown is not None:
        w, fix = shown
        return answer("checkpoint_no_grad", w.source,
                      f"{name} got no gradient, and torch.utils.checkpoint at {_short(w.source)} warned that none of "
                      f"its inputs requires grad. {fix}", None, w.seq)
    reach = _taint(facts, tensor)
    cands: list[tuple[int, Answer]] = []
    for op in facts.ops:
        if op.grad_mode != "grad" and tensor in op.inputs:
            block = facts.block_of(op)
            inside = f"the {block.mode} block at {_short(block.source)}" if block is not None else "a no_grad block"
            cands.append((op.seq, answer(
                "no_grad", _where(op),
                f"{name} was used by `{op.op}` at {_said(op)} inside {inside}, so no graph was recorded "
                f"from it and backward cannot reach it. Compute the loss outside that block.", None, op.seq,
            )))
            break
    for d in facts.detaches:
        if d.tensor in reach:
            how = {"detach": ".detach()", "data": ".data", "numpy": ".numpy()", "item": ".item()",
                   "tolist": ".tolist()", "tensor": "torch.tensor(t)"}.get(d.op, d.op)
            cands.append((d.seq, answer(
                "detached", d.source,
                f"{how} at {_short(d.source)} cut {facts.label(d.tensor) or 'a tensor'} (computed from {name}) off "
                f"the graph, so the loss does not depend on {name} for autograd. Keep the tensor in the graph "
                "(drop the .detach()/.item()/.data round trip).", None, d.seq,
            )))
            break
    if cands:
        return min(cands, key=lambda c: c[0])[1]
    if at is not None and not at.requires_grad:
        return answer(
            "not_requires_grad", None,
            f"{name} does not require grad, so autograd never computes a gradient for it. Create it with "
            f"requires_grad=True or call {name}.requires_grad_().",
        )
    calls = [c.source for c in facts.calls]
    loss = f" (backward at {_short(calls[0])})" if calls else ""
    return answer(
        "unused", None,
        f"{name} never took part in computing what backward was called on{loss}, so no gradient reaches it. "
        f"Check that the forward uses {name} (a parameter of a layer that forward() skips, say).",
    )


# torch's warnings that mean a gradient will be missing or wrong, though nothing fails: the
# reason, and what to do.
_WARNINGS: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"None of the inputs have requires_grad=True\. Gradients will be None"),
     "checkpoint_no_grad",
     "With use_reentrant=True, the checkpointed part's parameters then get no gradient. Pass "
     "use_reentrant=False, or call .requires_grad_() on an input of the checkpoint."),
    (re.compile(r"Using a target size \(.*\) that is different to the input size"),
     "broadcast_loss",
     "The loss broadcast its input and its target to one shape, so it compares every prediction with every "
     "target: the gradient is wrong though nothing fails. Give them the same shape (`output.squeeze(-1)`, or "
     "`target.view_as(output)`)."),
]


def _warned(facts: Facts, reason: str) -> tuple[ev.WarningShown, str] | None:
    """The first warning the program showed of the family ``reason``, and its fix."""
    for pattern, r, fix in _WARNINGS:
        if r == reason:
            w = next((w for w in facts.warnings if pattern.search(w.message)), None)
            return None if w is None else (w, fix)
    return None


def why_warnings(facts: Facts) -> Answer | None:
    """The first warning the program showed that means a missing or wrong gradient."""
    for w in facts.warnings:
        for pattern, reason, fix in _WARNINGS:
            if pattern.search(w.message):
                return Answer("grad", reason, w.source, None, None,
                              f"{w.category} at {_short(w.source)}: {w.message.split('. ')[0].rstrip('.')}. {fix}",
                              None, w.seq)
    return None


# -- --nan ------------------------------------------------------------------------------------


def _bad(stats: ev.Stats | None) -> bool:
    return stats is not None and (stats.nan > 0 or stats.inf > 0)


def _diverged(facts: Facts, seq: int, where: str | None, what: str) -> Answer | None:
    """The first NaN/Inf (at event ``seq``) came after backward passes whose largest leaf
    gradient grew by orders of magnitude: training blowing up (a learning rate too high), not
    one op's singular point."""
    peak: dict[int, float] = {}  # task -> the largest norm of a leaf's .grad it left
    for u in facts.trace.of_kind(ev.AccumulateGradUpdate):
        if u.seq < seq and u.after is not None and math.isfinite(u.after.norm) and not _bad(u.after):
            peak[u.task] = max(peak.get(u.task, 0.0), u.after.norm)
    norms = [peak[t.task] for t in facts.tasks if t.reentrant_depth == 0 and t.task in peak]
    if len(norms) < 2 or norms[0] <= 0 or norms[-1] < 1e3 * norms[0] or norms[-1] < max(norms[:-1]):
        return None
    call = facts.call_before(seq)
    loop = f" (backward at {_short(call.source)})" if call is not None else ""
    return Answer(
        "nan", "diverged", where, None, None,
        f"The training diverged: the largest gradient norm grew from {norms[0]:.3g} in the first backward to "
        f"{norms[-1]:.3g} in backward {len(norms)}{loop}, then {what} gave the first NaN/Inf. Lower the learning "
        "rate, clip the gradients (torch.nn.utils.clip_grad_norm_), or normalise the inputs.", None, seq,
    )


def _forward_origin(facts: Facts) -> tuple[ev.ForwardOp | None, bool]:
    """The op that made the first NaN/Inf of the forward from finite inputs, preferring the
    first whose NaN/Inf (through the ops it kept non-finite) reached a tensor backward was called
    on: an Inf a softmax absorbs (a -inf mask) comes before a real one and is not its cause.
    With it, whether it reached one."""
    origin: dict[int, ev.ForwardOp] = {}  # a non-finite output -> the op its NaN/Inf began at
    first = None
    for op in facts.ops:
        if op.finite is False:
            src = next((origin[i] for i in op.inputs if i in origin), None) or op
            first = first or src
            if op.output is not None:
                origin[op.output] = src
    reached = [origin[t] for c in facts.calls for t in c.tensors if t in origin]
    return (min(reached, key=lambda o: o.seq), True) if reached else (first, False)


def why_nan(facts: Facts) -> Answer:
    op, reached = _forward_origin(facts)
    backward = _backward_origin(facts)
    if backward is not None and not reached:
        return backward
    if op is not None:
        blew = _diverged(facts, op.seq, _where(op), f"`{op.op}` at {_said(op)}")
        if blew is not None:
            return blew
        fix = ("Clamp its input or add an epsilon." if facts.harmful else
               "No NaN/Inf reached a loss or a gradient, though: if it is meant (a mask of -inf before a "
               "softmax), nothing is wrong.")
        return Answer(
            "nan", "non_finite_forward", _where(op), facts.node_name(op.grad_fn),
            facts.label(op.output) or op.op,
            f"`{op.op}` at {_said(op)} made the first NaN/Inf of the forward from finite inputs "
            f"(log or division at 0, sqrt of a negative, exp overflowing). {fix}",
            op.grad_fn, op.seq,
        )
    return Answer("nan", "all_finite", None, None, None,
                  "No NaN or Inf was recorded, in the forward or in the backward.")


def _backward_origin(facts: Facts) -> Answer | None:
    """The first node whose incoming gradients were finite and whose outputs were not."""
    incoming: dict[tuple[int, int], bool] = {}  # (task, node) -> an incoming gradient was bad
    for b in facts.buffer_adds:
        if _bad(b.stats) and b.producer is not None and not incoming.get((b.task, b.producer), False):
            info = facts.nodes.get(b.producer)
            src = _where(info)
            op = facts.op_of_node.get(b.producer)
            made = f" (made by `{op.op}`)" if op is not None else ""
            blew = _diverged(facts, b.seq, src, f"{facts.node_name(b.producer)}{made} at {_said(info)}")
            if blew is not None:
                return blew
            return Answer(
                "nan", "non_finite_backward", src, facts.node_name(b.producer),
                facts.label(op.output) if op is not None else None,
                f"{facts.node_name(b.producer)}{made} at {_said(info)} turned finite gradients into NaN/Inf: its "
                "derivative is infinite or undefined at its input (sqrt or pow at 0, log at 0, acos at 1). "
                "Keep the input away from that point (clamp, add an epsilon).", b.producer, b.seq,
            )
        if _bad(b.stats):
            incoming[(b.task, b.node)] = True
    return None


# -- --error ----------------------------------------------------------------------------------

_INPLACE = re.compile(r"modified by an inplace operation")
_VERSION = re.compile(r"is at version (\d+); expected version (\d+)")
_OUTPUT_OF = re.compile(r"which is output \d+ of (\w+)")


def _inplace(facts: Facts, err: ev.Error) -> Answer | None:
    if not _INPLACE.search(err.message):
        return None
    node = err.node
    if node is None:  # torch names the node in its message
        m = _OUTPUT_OF.search(err.message)
        if m:
            named = [n for n in facts.nodes.values() if n.name == m.group(1) and n.seq < err.seq]
            node = named[-1].id if named else None
    op = facts.op_of_node.get(node) if node is not None else None
    m = _VERSION.search(err.message)
    expected = int(m.group(2)) if m else None
    bumps = [b for b in facts.bumps if b.seq < err.seq and (op is None or b.seq > op.seq)]
    if op is not None:
        ids = {*op.inputs, *([op.output] if op.output is not None else [])}
        mine = [b for b in bumps if b.tensor in ids]
        if mine:
            bumps = mine
        elif expected is not None:
            bumps = [b for b in bumps if b.version == expected + 1]
    elif expected is not None:
        # no op known for the node (torch's forward_op names none): the write that moved a tensor
        # past the version the node saved, not an earlier one (a module's init fills its weights)
        bumps = [b for b in bumps if b.version == expected + 1] or bumps
    bump = bumps[0] if bumps else None
    name = facts.node_name(node)
    saver = f"`{op.op}` at {_said(op)} ({name})" if op is not None else f"{name or 'a node'}"
    where = bump.source if bump is not None else None
    text = (f"`{bump.op}` at {_said(bump)} modified in place a tensor that {saver} saved for backward. "
            if bump is not None else f"A tensor that {saver} saved for backward was modified in place. ")
    text += "Use the out-of-place form (x = x + 1, not x += 1), or .clone() the tensor before modifying it."
    tensor = facts.label(bump.tensor) if bump is not None else None
    return Answer("error", "inplace", where, name, tensor, text, node, bump.seq if bump is not None else err.seq)


def _no_grad_fn(facts: Facts, err: ev.Error) -> Answer | None:
    if "does not require grad and does not have a grad_fn" not in err.message:
        return None
    call = facts.call_before(err.seq)
    m = re.search(r"element (\d+)", err.message)
    k = int(m.group(1)) if m else 0
    root = call.tensors[k] if call is not None and k < len(call.tensors) else None
    op = facts.creator.get(root) if root is not None else None
    det = next((d for d in facts.detaches if d.output == root), None) if root is not None else None
    label = facts.label(root) or "the tensor"
    if op is not None:
        block = facts.block_of(op)
        why = (f"inside the {block.mode} block at {_short(block.source)}" if block is not None
               else "from tensors that do not require grad")
        return Answer("error", "no_grad_fn", _where(op), None, label,
                      f"{label} was made by `{op.op}` at {_said(op)} {why}, so it has no grad_fn and "
                      "backward() has nothing to go back through. Compute it with grad enabled, from tensors that "
                      "require grad.", None, op.seq)
    if det is not None:
        return Answer("error", "no_grad_fn", det.source, None, label,
                      f"{label} was made by `{det.op}` at {_short(det.source)}, which cuts it off the graph, so "
                      "backward() has nothing to go back through. Keep it in the graph.", None, det.seq)
    made = [o for o in facts.ops
            if o.grad_mode != "grad" and o.output is not None and (call is None or o.seq < call.seq)]
    if made:  # the loss came from tensors a no_grad block made (what made it from them was not seen)
        op = made[-1]
        block = facts.block_of(op)
        inside = f"the {block.mode} block at {_short(block.source)}" if block is not None else "a no_grad block"
        return Answer("error", "no_grad_fn", _where(op), None, label,
                      f"{label} has no grad_fn: it was computed from tensors made inside {inside} (last: `{op.op}` at "
                      f"{_said(op)}), which record no graph. Compute them with grad enabled, outside that "
                      "block.", None, op.seq)
    where = call.source if call is not None else None
    return Answer("error", "no_grad_fn", where, None, label,
                  f"backward() at {_short(where)} was called on {label}, which no op that requires grad made (a "
                  "new tensor, or one made from tensors without requires_grad=True). Set requires_grad=True on "
                  "the inputs that should get gradients.", None, err.seq)


def _freed(facts: Facts, err: ev.Error) -> Answer | None:
    if "backward through the graph a second time" not in err.message:
        return None
    earlier = [t for t in facts.tasks if t.seq < err.seq and t.reentrant_depth == 0 and not t.keep_graph]
    if err.node is not None:
        ran_in = {b.task for b in facts.ran.get(err.node, []) if b.seq < err.seq and b.task != err.task}
        mine = [t for t in earlier if t.task in ran_in]
        earlier = mine or earlier
    if err.task is not None:
        earlier = [t for t in earlier if t.task != err.task]
    first = earlier[-1] if earlier else None
    call = facts.call_of_task.get(first.task) if first is not None else None
    where = call.source if call is not None else None
    now = facts.call_of_task.get(err.task) if err.task is not None else None
    if now is None:
        later = [c for c in facts.calls if c.seq < err.seq]
        now = later[-1] if later else None
    name = facts.node_name(err.node)
    return Answer(
        "error", "freed", where, name, None,
        f"The backward at {_short(where)} freed the graph's saved tensors (retain_graph was not set); the backward "
        f"at {_short(now.source if now else None)} went through the same graph again. Pass retain_graph=True to "
        "the first, or recompute the forward before the second (often: a tensor from the previous iteration, such "
        "as a hidden state, that was not detached).", err.node, err.seq,
    )


# The rules that explain an error, tried in order; each returns None if the error is not its
# kind. The distributed recording appends its rule (unused_parameters) here.
def _unused_parameters(facts: Facts, err: ev.Error) -> Answer | None:  # ddp
    """DDP's "Expected to have finished reduction": the parameters that got no gradient, by
    module path (gradviz.trace.ddp reads the distributed recording's events)."""
    a = unused_parameters(facts.trace)
    if a is None:
        return None
    return Answer("error", "unused_parameters", a["where"], None, a["tensor"], a["text"], None, err.seq)


# torch's own messages (gradviz's engine gives the same), each a mistake with one fix: the
# reason, and what to do. The answer's line is the user's code the error came from (Error.source).
_MESSAGES: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"a (view of a )?leaf Variable that requires grad is being used in an in-place operation"),
     "leaf_inplace",
     "An in-place op on a leaf that requires grad (a parameter, or a tensor made with requires_grad=True) is "
     "refused: autograd could not compute that leaf's gradient. Update it inside `with torch.no_grad():`, as "
     "optimizers do, or use the out-of-place form (`w = w - lr * g`)."),
    (re.compile(r"grad can be implicitly created only for (real )?scalar outputs"),
     "non_scalar_backward",
     "backward() was called on a tensor with more than one element, so there is no starting gradient. Reduce it "
     "to a scalar first (`.sum()`, `.mean()`, a loss function), or pass `gradient=` (a tensor of its shape)."),
    (re.compile(r"is a view and (is being|its base or another view of its base has been) modified inplace"
                r"|is a view of a view which was created in no_grad mode"),
     "view_inplace",
     "A view autograd cannot rewrite in place (an output of unbind/split/chunk, or a view made under no_grad) was "
     "modified in place. Use the out-of-place op, or .clone() the view first."),
    (re.compile(r"appears to not have been used in the graph"),
     "unused_input",
     "autograd.grad() was asked for the gradient of an input the outputs do not depend on. Pass "
     "allow_unused=True (its gradient is then None, or zeros with materialize_grads=True), or check that the "
     "output is computed from it."),
    (re.compile(r"[Ii]nference tensors cannot be saved for backward|[Ii]nplace update to inference tensor"),
     "inference_tensor",
     "A tensor made under torch.inference_mode() was used where autograd records a graph. Make it outside "
     "inference_mode (or under torch.no_grad() instead), or .clone() it before use."),
    (re.compile(r"returned an invalid gradient at index \d+|returned an incorrect number of gradients"),
     "bad_gradient",
     "A custom Function's backward (or a hook) returned the wrong gradients: backward returns one gradient per "
     "input of forward (None for non-tensor inputs), each of its input's shape, dtype and device."),
    (re.compile(r"Can't call numpy\(\) on Tensor that requires grad"),
     "numpy_requires_grad",
     "numpy() cannot take a tensor that requires grad: numpy's values are outside autograd. For values only, "
     "use .detach().numpy(); to keep the gradient, stay in torch ops."),
    (re.compile(r"must have the same dtype|expected scalar type \w+ but found \w+|Found dtype \w+ but expected \w+"
                r"|expected both vectors to have same dtype"),
     "dtype_mismatch",
     "An op got tensors of different dtypes (a float64 array from numpy beside float32 weights, say). Convert "
     "one side (`.float()`, or `torch.from_numpy(a).float()`), or the model (`model.double()`)."),
    (re.compile(r"Expected all tensors to be on the same device"),
     "device_mismatch",
     "An op got tensors on different devices. Move them to one device (`.to(device)`, and the model with "
     "`model.to(device)`) before the op."),
]


def _message(facts: Facts, err: ev.Error) -> Answer | None:
    for pattern, reason, fix in _MESSAGES:
        if pattern.search(err.message):
            call = facts.call_before(err.seq)
            where = err.source or (call.source if call is not None else None)
            at = f" at {_short(where)}" if where else ""
            return Answer("error", reason, where, facts.node_name(err.node), None,
                          f"{err.type}{at}: {err.message.split('. ')[0].rstrip('.')}. {fix}", err.node, err.seq)
    return None


ERROR_RULES: list[Callable[[Facts, ev.Error], Answer | None]] = [_inplace, _no_grad_fn, _freed,
                                                                 _unused_parameters, _message]  # ddp


def why_error(facts: Facts) -> Answer:
    errs = facts.errors
    if not errs:
        return Answer("error", "no_error", None, None, None, "The run recorded no error.")
    # the first error of the backward is the cause; a program error repeats it at the end
    err = errs[0]
    for rule in ERROR_RULES:
        a = rule(facts, err)
        if a is not None:
            return a
    info = facts.nodes.get(err.node) if err.node is not None else None
    call = facts.call_before(err.seq)
    call_site = call.source if call is not None else None
    # the user's frame it came from (a hook, a custom Function), unless that is only the backward
    # call: then the line that made the node that raised says more
    where = err.source if err.source and (info is None or err.source != call_site) else \
        _where(info) if info is not None else call_site
    return Answer("error", "error", where, facts.node_name(err.node), None, f"{err.type}: {err.message}",
                  err.node, err.seq)


# -- the entry point ----------------------------------------------------------------------------


def why(trace: Any, grad: str | None = None, nan: bool = False, error: bool = False) -> Answer:
    """Answer one question about ``trace`` (a gradviz.trace.model.Trace): ``grad=NAME``, ``nan``,
    ``error``; none: the first problem, by importance (error, NaN/Inf, a leaf whose .grad is None)."""
    if sum((grad is not None, bool(nan), bool(error))) > 1:
        raise WhyError("ask one question at a time: --grad NAME, --nan or --error")
    facts = Facts(trace)
    if grad is not None:
        return why_grad(facts, grad)
    if nan:
        return why_nan(facts)
    if error:
        return why_error(facts)
    ended_ok = trace.status == "ok"
    if facts.errors and not ended_ok:
        return why_error(facts)
    a = why_nan(facts)
    if a.reason != "all_finite" and (a.reason != "non_finite_forward" or facts.harmful):
        return a
    for r in facts.grad_reads:  # the program read a .grad that could only be None
        at = next((t for t in facts.at_end if t.tensor == r.tensor), None)
        return _why_grad(facts, r.tensor, at, facts.label(r.tensor) or "the tensor")
    for t in _expected_grads(facts):
        return why_grad(facts, t.name)
    warned = why_warnings(facts)
    if warned is not None:
        return warned
    if facts.errors:  # raised and handled by the program (it ended ok): still an error of autograd's
        return why_error(facts)
    return Answer("grad", "no_problem", None, None, None,
                  "No problem found: no error, no NaN/Inf, every named leaf that requires grad has a .grad, no "
                  ".grad read of a non-leaf, and no warning of a missing or wrong gradient.")


def _expected_grads(facts: Facts) -> list[ev.TensorAtEnd]:
    """The named leaves whose .grad is None at the end though the program meant them to have one:
    a module's parameter when other parameters of the same variable's module got gradients (an
    unused layer, a detach inside the model), or a tensor of its own that an op used before the
    program's last backward() (not autograd.grad, which writes no .grad) on the way to a detach, a
    no_grad block or a root of a backward. A model made after the
    training (to load a checkpoint into), one no backward ever reached, or a leaf whose gradient a
    loop set back to None after using it, is not a problem."""
    last = max((c.seq for c in facts.calls if c.api == "backward"), default=None)
    if last is None:
        return []
    used = {i for op in facts.ops if op.seq < last for i in op.inputs}
    graded = {t.name.split(".", 1)[0] for t in facts.at_end if t.leaf and t.grad != "none"}
    roots = {r for c in facts.calls for r in c.tensors}
    cut = {d.tensor for d in facts.detaches} | {i for op in facts.ops if op.grad_mode != "grad" for i in op.inputs}
    out = []
    for t in facts.at_end:
        if not (t.leaf and t.requires_grad and t.grad == "none") or facts.updates.get(t.tensor):
            continue  # has a .grad, or had one (set back to None after its step, as loops do)
        owner, dot, _ = t.name.partition(".")
        if dot:
            if owner in graded:
                out.append(t)
        elif t.tensor in used:
            # a tensor of its own: what it fed was cut off (a detach, a no_grad use) or reached a
            # backward's root; one that only fed a result nobody differentiated is a demo's
            reach = _taint(facts, t.tensor)
            if reach & (cut | roots):
                out.append(t)
    return out


def facts_of(trace: Any) -> Facts:
    """The trace's Facts, made once per trace (the stepper asks at every redraw)."""
    f = trace.__dict__.get("_why_facts")
    if f is None:
        f = trace.__dict__["_why_facts"] = Facts(trace)
    return f


def about_node(trace: Any, node: int) -> Answer | None:
    """The answer that concerns ``node``, if any: the error it raised, the first NaN/Inf it
    made, or, for a leaf's AccumulateGrad, why the leaf's .grad is None."""
    facts = facts_of(trace)
    for err in facts.errors:
        if err.node == node:
            a = _explain(facts, err)
            return a
    nan = why_nan(facts)
    if nan.node_id == node:
        return nan
    info = facts.nodes.get(node)
    if info is not None and info.tensor is not None:
        at = next((t for t in facts.at_end if t.tensor == info.tensor), None)
        if at is not None and at.grad == "none":
            return why_grad(facts, at.name)
    return None


def _explain(facts: Facts, err: ev.Error) -> Answer:
    for rule in ERROR_RULES:
        a = rule(facts, err)
        if a is not None:
            return a
    info = facts.nodes.get(err.node) if err.node is not None else None
    return Answer("error", "error", _where(info), facts.node_name(err.node), None,
                  f"{err.type}: {err.message}", err.node, err.seq)


ANSWERERS["why"] = why
