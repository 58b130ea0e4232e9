"""Differential harness: run one program on torch and on gradviz, compare what autograd did.

A program is ``prog(T) -> Case`` where ``T`` is the module (``torch`` or ``gradviz``). It builds a
graph and returns the roots to walk, a ``run`` callable that does the backward part (called after
the harness has put a pre-hook on every node), and the tensors whose values to compare. The
harness compares, between the two runs:

- the graph reachable from the roots: node names and ``next_functions``, with nodes matched by
  position in a breadth-first walk, so sharing (diamonds, one AccumulateGrad per leaf) and
  ``(None, 0)`` entries must agree too;
- the order in which those nodes execute, recorded with ``Node.register_prehook``;
- forward values of the roots, the ``.grad`` of the listed tensors, and whatever ``run`` returns,
  as float64 arrays with a tight tolerance.

torch is a hard requirement here: a missing torch must fail the differential tests, not skip them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import gradviz

RTOL = 1e-10
ATOL = 1e-12


@dataclass
class Case:
    """What a program hands back to the harness."""

    roots: Sequence[Any]  # tensors (or grad_fns) whose graph is walked and compared
    run: Callable[[], Any] | None = None  # the backward part; its result is compared
    grads_of: Sequence[Any] = ()  # tensors whose .grad is compared after run()
    values: Sequence[Any] = ()  # extra tensors whose values are compared after run()
    walk_after: Sequence[Any] = ()  # roots whose graph is compared after run() (create_graph)
    keep: Any = None  # held until the run is over (keeps side branches of the graph alive)


@dataclass
class Outcome:
    """One run of a program on one module, reduced to plain data."""

    structure: list[tuple[str, tuple]] = field(default_factory=list)
    seq: list[int] = field(default_factory=list)  # sequence_nr relative to the smallest, per node
    order: list[Any] = field(default_factory=list)
    root_values: list[Any] = field(default_factory=list)
    result: Any = None
    grads: list[Any] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    after: list[tuple[str, tuple]] = field(default_factory=list)
    after_seq: list[int] = field(default_factory=list)


def to_np(x: Any) -> Any:
    """Tensors to float64/int/bool numpy arrays, recursively through tuples and lists."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        # force: torch hands out ZeroTensors (e.g. the gradient through sgn), which refuse numpy()
        return np.asarray(x.detach().numpy(force=True))
    if isinstance(x, gradviz.Tensor):
        return np.asarray(x.detach().numpy())
    if isinstance(x, (tuple, list)):
        return type(x)(to_np(v) for v in x) if isinstance(x, list) else tuple(to_np(v) for v in x)
    return x


def _grad_fn_of(r: Any) -> Any:
    if isinstance(r, (torch.Tensor, gradviz.Tensor)):
        if r.grad_fn is not None:
            return r.grad_fn
        return None
    return r  # already a node


def node_name(fn: Any) -> str:
    # torch's C++ nodes name themselves with their namespace ("torch::autograd::AccumulateGrad");
    # gradviz uses the bare class name. Compared without it (tests/ops/test_tensor.py notes the gap).
    return fn.name().removeprefix("torch::autograd::")


def walk(roots: Sequence[Any]) -> tuple[list[tuple[str, tuple]], list[Any]]:
    """Breadth-first over next_functions (no recursion): [(name, ((child index | None, nr), ...))]."""
    index: dict[int, int] = {}
    nodes: list[Any] = []
    queue: deque = deque()
    for r in roots:
        fn = _grad_fn_of(r)
        if fn is not None and id(fn) not in index:
            index[id(fn)] = len(nodes)
            nodes.append(fn)
            queue.append(fn)
    structure: list[tuple[str, tuple]] = []
    edges_of: dict[int, tuple] = {}
    while queue:
        fn = queue.popleft()
        edges = []
        for child, nr in fn.next_functions:
            if child is None:
                edges.append((None, nr))
                continue
            if id(child) not in index:
                index[id(child)] = len(nodes)
                nodes.append(child)
                queue.append(child)
            edges.append((index[id(child)], nr))
        edges_of[id(fn)] = tuple(edges)
    for fn in nodes:
        structure.append((node_name(fn), edges_of[id(fn)]))
    return structure, nodes


def relative_sequence_nrs(nodes: list[Any]) -> list[int]:
    """Each node's sequence_nr minus the smallest one (AccumulateGrad's UINT64_MAX as -1): equal
    lists mean the same nodes were made in the same order with the same gaps between them."""
    nrs = [fn._sequence_nr() for fn in nodes]
    real = [n for n in nrs if n < 2**63]
    base = min(real) if real else 0
    return [n - base if n < 2**63 else -1 for n in nrs]


def run_on(prog: Callable[[Any], Case], T: Any, hooks: bool = True) -> Outcome:
    if T is torch:
        torch.manual_seed(0)
    else:
        gradviz.manual_seed(0)
    case = prog(T)
    out = Outcome()
    out.structure, nodes = walk(case.roots)
    out.seq = relative_sequence_nrs(nodes)
    out.root_values = [to_np(r) for r in case.roots if not _is_node(r)]
    handles = []
    if hooks:
        for i, fn in enumerate(nodes):
            handles.append(fn.register_prehook(lambda grads, i=i: out.order.append(i)))
    if case.run is not None:
        out.result = to_np(case.run())
    for h in handles:
        h.remove()
    out.grads = [to_np(t.grad) for t in case.grads_of]
    out.values = [to_np(v) for v in case.values]
    if case.walk_after:
        out.after, after_nodes = walk(case.walk_after)
        out.after_seq = relative_sequence_nrs(after_nodes)
    return out


def _is_node(x: Any) -> bool:
    return not isinstance(x, (torch.Tensor, gradviz.Tensor))


def assert_close(a: Any, b: Any, what: str) -> None:
    """a from torch, b from gradviz: same nesting, shapes, dtypes (kind) and values."""
    if a is None or b is None:
        assert a is None and b is None, f"{what}: torch gave {a!r}, gradviz gave {b!r}"
        return
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{what}: torch {a!r} vs gradviz {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{what}[{i}]")
        return
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{what}: torch gave an array, gradviz {type(b).__name__}"
        assert a.shape == b.shape, f"{what}: shape {a.shape} (torch) vs {b.shape} (gradviz)"
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} (torch) vs {b.dtype} (gradviz)"
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL, err_msg=what, equal_nan=True)
        else:
            np.testing.assert_array_equal(b, a, err_msg=what)
        return
    assert a == b, f"{what}: torch {a!r} vs gradviz {b!r}"


def check(prog: Callable[[Any], Case], order: bool = True) -> tuple[Outcome, Outcome]:
    """Run ``prog`` on both and assert they agree; returns (torch outcome, gradviz outcome)."""
    ref = run_on(prog, torch)
    got = run_on(prog, gradviz)
    assert got.structure == ref.structure, _structure_diff(ref.structure, got.structure)
    assert got.seq == ref.seq, "relative sequence numbers:\n" + "\n".join(
        f"{'  ' if a == b else '!!'} {i}: {ref.structure[i][0]} torch {a} gradviz {b}"
        for i, (a, b) in enumerate(zip(ref.seq, got.seq)))
    if order:
        names = [ref.structure[i][0] for i in ref.order]
        got_names = [got.structure[i][0] for i in got.order] if got.order and max(got.order) < len(
            got.structure) else got.order
        assert got.order == ref.order, f"execution order:\n torch   {names}\n gradviz {got_names}"
    assert_close(ref.root_values, got.root_values, "root values")
    assert_close(ref.result, got.result, "run() result")
    assert_close(ref.grads, got.grads, "grads")
    assert_close(ref.values, got.values, "values")
    assert got.after == ref.after, "graph after run():\n" + _structure_diff(ref.after, got.after)
    assert got.after_seq == ref.after_seq, "relative sequence numbers of the graph after run():\n" + "\n".join(
        f"{'  ' if a == b else '!!'} {i}: {ref.after[i][0]} torch {a} gradviz {b}"
        for i, (a, b) in enumerate(zip(ref.after_seq, got.after_seq)))
    return ref, got


def _structure_diff(ref: list, got: list) -> str:
    lines = ["graph structure differs (index: name, next_functions):"]
    for i in range(max(len(ref), len(got))):
        a = ref[i] if i < len(ref) else None
        b = got[i] if i < len(got) else None
        mark = "  " if a == b else "!!"
        lines.append(f"{mark} {i}: torch {a}  |  gradviz {b}")
    return "\n".join(lines)


def leaf(T: Any, *shape: int, seed: int = 0, low: float | None = None, requires_grad: bool = True) -> Any:
    """A float64 leaf with the same values on both modules (numpy draws them)."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape) if low is None else rng.uniform(low, low + 1.5, shape)
    return T.tensor(data, dtype=T.float64, requires_grad=requires_grad)
