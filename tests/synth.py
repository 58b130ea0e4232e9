"""Synthetic traces: backward graphs built by hand, and a simulated engine run over them.

Tests and benchmarks need traces before (and independently of) the engine: a trace is just a
list of events, so ``TraceBuilder`` writes the events the recorder would write for a graph you
describe node by node, and ``TraceBuilder.backward`` simulates the engine's scheduling of one
graph task (dependencies, InputBuffers, not_ready, a ready queue per device ordered like torch's,
AccumulateGrad updates) in the order the real engine emits them.

The simulation runs every node on the thread that owns its device's queue, one node at a time: it
is faithful to the order of events a single-threaded run produces, not to real concurrency.

Dependency counts and exec_info come from the engine's own ``compute_dependencies`` and
``GraphTask.init_to_execute``, run over stand-ins of the described nodes: one copy of the rules.

``backward_graph(kind, nodes)`` makes backward-shaped graphs of a given size (MLP-like,
chain-like, wide) for benchmarks.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gradviz.autograd.engine import compute_dependencies, compute_min_topological_nr
from gradviz.autograd.graph_task import GraphTask
from gradviz.replay.state_types import HeapItem, QueueEntry  # the queue as the engine orders it
from gradviz.trace import events as ev
from gradviz.trace.model import Trace

Target = int | tuple[int, int] | None  # a node id (input_nr 0), (node, input_nr), or an invalid edge


@dataclass
class _Node:
    id: int
    name: str
    sequence_nr: int
    num_inputs: int
    next_edges: list[tuple[int | None, int]]
    device: str
    saved: tuple[tuple[int, ...], ...]
    shape: tuple[int, ...]  # shape of the gradient each InputBuffer slot receives
    tensor: int | None = None


@dataclass
class _Task:
    id: int
    depth: int
    keep_graph: bool
    dependencies: dict[int, int] = field(default_factory=dict)
    not_ready: dict[int, list[bool]] = field(default_factory=dict)  # node -> slots filled
    needed: set[int] | None = None


class _EngineNode:
    __slots__ = ("id", "topological_nr", "next_edges")

    def __init__(self, nid: int, topo: int):
        self.id, self.topological_nr = nid, topo
        self.next_edges: tuple[tuple[_EngineNode | None, int], ...] = ()


class TraceBuilder:
    """Builds a trace event by event. Ids are assigned in creation order, like the engine's."""

    def __init__(self, *, argv: Sequence[str] = ("synthetic",), devices: Sequence[str] = ("cpu",)):
        self.events: list[ev.Event] = []
        self.nodes: dict[int, _Node] = {}
        self.tensors: dict[int, ev.TensorCreated] = {}
        self._seq = 0
        self._ids = {"tensor": 0, "node": 0, "task": 0, "queue": 0, "tid": 0, "seqnr": 0}
        self._device_threads: dict[str, tuple[int, int]] = {}  # device -> (tid, queue)
        self._depth = 0
        self._finished = False
        self._topos: dict[int, int] = {}  # node -> topological_nr
        self.emit(
            ev.TraceBegin, tid=1, format_version=ev.FORMAT_VERSION, gradviz_version="synthetic",
            numpy_version="", python_version="", platform="synthetic", devices=tuple(devices),
            argv=tuple(argv), pid=0, values=False,
        )
        self.main_tid = self.thread("MainThread", None, "caller")
        self.cpu_queue = self.queue("cpu", self.main_tid, "cpu@MainThread")

    # -- low level ------------------------------------------------------------------------
    def _next(self, what: str) -> int:
        self._ids[what] += 1
        return self._ids[what]

    def emit(self, cls: type[ev.Event], *, tid: int | None = None, **fields: object) -> ev.Event:
        """Append one event; seq and ts are assigned here."""
        e = cls(seq=self._seq, ts=self._seq * 1000, tid=self.main_tid if tid is None else tid, **fields)
        self._seq += 1
        self.events.append(e)
        return e

    def thread(self, name: str, device: str | None, role: str) -> int:
        tid = self._next("tid")
        self.emit(ev.ThreadStart, tid=tid, name=name, device=device, role=role)
        return tid

    def queue(self, device: str, owner: int | None, name: str) -> int:
        q = self._next("queue")
        self.emit(ev.QueueCreated, queue=q, device=device, owner=owner, name=name)
        return q

    def _device(self, device: str) -> tuple[int, int]:
        """(tid, queue) serving a non-CPU device; the worker thread starts on first use."""
        if device not in self._device_threads:
            tid = self.thread(f"gradviz-{device}", device, "device_worker")
            self._device_threads[device] = (tid, self.queue(device, tid, device))
        return self._device_threads[device]

    # -- the forward graph ------------------------------------------------------------------
    def leaf(
        self, name: str | None = None, shape: tuple[int, ...] = (2,), *, dtype: str = "float32",
        device: str = "cpu", source: str | None = None,
    ) -> int:
        """A leaf tensor that requires grad, and its AccumulateGrad node. Returns the node id."""
        t = self._next("tensor")
        self.tensors[t] = self.emit(
            ev.TensorCreated, tensor=t, name=name, shape=shape, dtype=dtype, device=device, source=source
        )  # type: ignore[assignment]
        return self.op(
            "AccumulateGrad", [], num_inputs=1, device=device, source=source, shape=shape, tensor=t,
            sequence_nr=ev.MAX_SEQUENCE_NR,
        )

    def op(
        self, name: str, inputs: Sequence[Target], *, num_inputs: int = 1, device: str = "cpu",
        saved: Sequence[tuple[int, ...]] = (), source: str | None = None, shape: tuple[int, ...] = (2,),
        tensor: int | None = None, sequence_nr: int | None = None,
    ) -> int:
        """A backward node whose next_edges point at ``inputs``. Returns the node id."""
        nid = self._next("node")
        edges: list[tuple[int | None, int]] = []
        for target in inputs:
            if target is None:
                edges.append((None, 0))
            elif isinstance(target, tuple):
                edges.append(target)
            else:
                edges.append((target, 0))
        topo = 1 + max((self._topo(d) for d, _ in edges if d is not None), default=-1) if edges else 0
        seqnr = self._next("seqnr") - 1 if sequence_nr is None else sequence_nr
        self.nodes[nid] = _Node(nid, name, seqnr, num_inputs, edges, device, tuple(saved), shape, tensor)
        self._topos[nid] = topo
        self.emit(
            ev.NodeCreated, node=nid, name=name, sequence_nr=seqnr, topological_nr=topo,
            num_inputs=num_inputs, num_outputs=len(edges), device=device, saved=tuple(saved),
            source=source, tensor=tensor,
        )
        for slot, (dst, input_nr) in enumerate(edges):
            self.emit(ev.EdgeCreated, src=nid, slot=slot, dst=dst, input_nr=input_nr)
        return nid

    def _topo(self, nid: int) -> int:
        return self._topos.get(nid, 0)

    # -- a backward pass ------------------------------------------------------------------
    def backward(
        self, root: int, *, keep_graph: bool = False, inputs: Sequence[int] = (),
        error_at: int | None = None, nan_at: int | None = None,
        during: dict[int, Callable[[TraceBuilder], object]] | None = None,
        norm: Callable[[int], float] | None = None,
    ) -> int:
        """Simulate ``root``'s backward() as one graph task; returns the task id.

        inputs: like backward(inputs=...): only the paths to these AccumulateGrad nodes run
        (an ExecInfo event lists the needed nodes). error_at: that node raises when it runs.
        nan_at: that node's outputs are NaN. during: node -> function called while the node
        runs (use it to start a reentrant backward from inside a node).
        """
        norm = norm or (lambda n: 1.0 + 0.25 * n)
        task = _Task(self._next("task"), self._depth, keep_graph)
        tid = self.main_tid
        # Dependencies and exec_info: the engine's own rules, over stand-ins of the nodes
        stand = self._stand_ins()
        gt = GraphTask(keep_graph, False, True, task.depth, None)  # type: ignore[arg-type]
        outputs = [(stand[n], 0) for n in inputs]
        min_topo = compute_min_topological_nr(outputs) if outputs else 0
        compute_dependencies(stand[root], gt, min_topo)
        task.dependencies = {n.id: c for n, c in gt.dependencies.items()}
        self.emit(
            ev.TaskBegin, task=task.id, roots=((root, 0),), graph_root=None, keep_graph=keep_graph,
            create_graph=False, accumulate_grad=True, outputs=(), reentrant_depth=task.depth,
            owner=tid, cpu_queue=self.cpu_queue,
        )
        self.emit(ev.Dependencies, task=task.id, counts=tuple(sorted(task.dependencies.items())))
        if inputs:
            gt.init_to_execute(stand[root], outputs, True, min_topo)
            task.needed = {n.id for n, info in gt.exec_info.items() if info.needed}
            self.emit(ev.ExecInfo, task=task.id, needed=tuple(sorted(task.needed)), captured=())
        ready: dict[int, list[HeapItem]] = {}  # queue -> its heap, ranked as the engine's

        def queue_of(nid: int) -> tuple[int, int, str]:
            dev = self.nodes[nid].device
            if dev == "cpu":
                return self.cpu_queue, self.main_tid, "cpu"
            t, q = self._device(dev)
            return q, t, dev

        def push(nid: int, by_tid: int) -> None:
            q, _, dev = queue_of(nid)
            node = self.nodes[nid]
            prio = (ev.PRIORITY_NODE, task.depth, node.sequence_nr)
            heapq.heappush(ready.setdefault(q, []), HeapItem(QueueEntry(task.id, nid, "node", prio, self._seq)))
            self.emit(
                ev.QueuePush, tid=by_tid, queue=q, device=dev, task=task.id, node=nid, what="node",
                priority=prio, size=len(ready[q]),
            )

        def stats(nid: int) -> ev.Stats:
            if nid == nan_at:
                return ev.Stats(math.nan, math.nan, math.nan, 1, 0)
            g = norm(nid)
            return ev.Stats(g, -g, g, 0, 0)

        root_node = self.nodes[root]
        self.emit(
            ev.BufferAdd, task=task.id, node=root, slot=0, mode="set", producer=None,
            shape=root_node.shape, dtype="float32", device=root_node.device,
            stats=ev.Stats(1.0, 1.0, 1.0, 0, 0),
        )
        push(root, tid)
        status, error = "ok", None
        while any(ready.values()):
            # Each queue pops as the engine's heap does: highest reentrant depth, then highest
            # sequence_nr, equal ones in the heap's own order; the queue whose next ranks highest.
            q = min((q for q in ready if ready[q]), key=lambda q: ready[q][0].rank)
            nid = heapq.heappop(ready[q]).entry.node
            node = self.nodes[nid]
            _, run_tid, dev = queue_of(nid)
            self.emit(
                ev.QueuePop, tid=run_tid, queue=q, device=dev, task=task.id, node=nid, what="node",
                priority=(ev.PRIORITY_NODE, task.depth, node.sequence_nr), size=len(ready[q]),
            )
            self.emit(ev.NodeBegin, tid=run_tid, task=task.id, node=nid, depth=task.depth)
            if during and nid in during:
                self._depth += 1
                during[nid](self)
                self._depth -= 1
            if nid == error_at:
                self.emit(ev.NodeEnd, tid=run_tid, task=task.id, node=nid, status="error")
                msg = f"{node.name} failed"
                self.emit(ev.Error, tid=run_tid, task=task.id, node=nid, type="RuntimeError", message=msg)
                status, error = "error", f"RuntimeError: {msg}"
                break
            if node.tensor is not None:
                s = stats(nid)
                self.emit(
                    ev.AccumulateGradUpdate, tid=run_tid, task=task.id, node=nid, tensor=node.tensor,
                    mode="set", before=None, after=s,
                )
            self.emit(ev.NodeEnd, tid=run_tid, task=task.id, node=nid, status="ok")
            if nid == nan_at:
                self.emit(
                    ev.Anomaly, tid=run_tid, task=task.id, node=nid, forward=None,
                    message=f"Function '{node.name}' returned nan values in its 0th output.",
                )
            if node.saved and not keep_graph:
                self.emit(ev.SavedRelease, tid=run_tid, node=nid, count=len(node.saved))
            for dst, input_nr in node.next_edges:
                if dst is None:
                    continue
                remaining = task.dependencies[dst] - 1
                task.dependencies[dst] = remaining
                self.emit(
                    ev.DependencyDecrement, tid=run_tid, task=task.id, node=dst, by=nid, remaining=remaining
                )
                parked = task.not_ready.get(dst)
                if parked is None and task.needed is not None and dst not in task.needed:
                    continue
                target = self.nodes[dst]
                mode = "accumulate" if parked is not None and parked[input_nr] else "set"
                self.emit(
                    ev.BufferAdd, tid=run_tid, task=task.id, node=dst, slot=input_nr, mode=mode, producer=nid,
                    shape=target.shape, dtype="float32", device=target.device, stats=stats(nid),
                )
                if parked is None:
                    if remaining == 0:
                        push(dst, run_tid)
                    else:
                        slots = [False] * max(target.num_inputs, input_nr + 1)
                        slots[input_nr] = True
                        task.not_ready[dst] = slots
                        self.emit(ev.NotReadyPark, tid=run_tid, task=task.id, node=dst, remaining=remaining)
                else:
                    parked[input_nr] = True
                    if remaining == 0:
                        del task.not_ready[dst]
                        self.emit(ev.NotReadyTake, tid=run_tid, task=task.id, node=dst)
                        push(dst, run_tid)
        self.emit(ev.TaskEnd, task=task.id, status=status, error=error)
        return task.id

    def _stand_ins(self) -> dict[int, _EngineNode]:
        """The described nodes as the engine's functions read nodes (next_edges, topological_nr)."""
        stand = {nid: _EngineNode(nid, self._topo(nid)) for nid in self.nodes}
        for nid, node in self.nodes.items():
            stand[nid].next_edges = tuple((None if d is None else stand[d], nr) for d, nr in node.next_edges)
        return stand

    # -- finishing ------------------------------------------------------------------------
    def finish(self, status: str = "ok") -> list[ev.Event]:
        """The events, with trace_end appended once."""
        if not self._finished:
            self._finished = True
            self.emit(ev.TraceEnd, status=status, events=len(self.events))
        return self.events

    def trace(self) -> Trace:
        return Trace(self.finish())


# --- backward-shaped graphs of a given size ---------------------------------------------------


def backward_graph(kind: str, nodes: int, *, run: bool = True) -> TraceBuilder:
    """A graph of about ``nodes`` nodes shaped like a real backward graph, and (run) its backward.

    kind: "mlp" (layers of Relu/Add/Mm/T with weight and bias leaves: repeated identical
    blocks), "chain" (long runs of unary ops with scale parameters and residual adds), "wide"
    (many identical independent branches summed into one loss).
    """
    b = TraceBuilder(argv=(f"synthetic-{kind}", str(nodes)))
    src = f"synthetic_{kind}.py"
    if kind == "mlp":
        x: int | None = None  # the network input does not require grad
        for layer in range((nodes - 2) // 6):
            line = 10 + layer % 3
            w = b.leaf(f"layers.{layer}.weight", (16, 16), source=f"{src}:4")
            bias = b.leaf(f"layers.{layer}.bias", (16,), source=f"{src}:5")
            t = b.op("TBackward0", [w], source=f"{src}:{line}", shape=(16, 16))
            mm = b.op("MmBackward0", [x, t], saved=((8, 16), (16, 16)), source=f"{src}:{line}", shape=(8, 16))
            add = b.op("AddBackward0", [mm, bias], source=f"{src}:{line}", shape=(8, 16))
            x = b.op("ReluBackward0", [add], saved=((8, 16),), source=f"{src}:{line}", shape=(8, 16))
        root = b.op("SumBackward0", [x], source=f"{src}:20", shape=())
    elif kind == "chain":
        x = b.leaf("x", (32,), source=f"{src}:3")
        history: list[int] = [x]
        unary = ("MulBackward0", "SinBackward0", "ExpBackward0", "TanhBackward0")
        i = 0
        while len(b.nodes) < nodes - 1:
            i += 1
            if i % 23 == 0:
                s = b.leaf(f"scale{i}", (32,), source=f"{src}:6")
                x = b.op("MulBackward0", [x, s], saved=((32,), (32,)), source=f"{src}:8", shape=(32,))
            elif i % 37 == 0 and len(history) > 6:
                x = b.op("AddBackward0", [x, history[-6]], source=f"{src}:9", shape=(32,))
            else:
                name = unary[i % len(unary)]
                x = b.op(name, [x], saved=((32,),), source=f"{src}:{11 + i % 4}", shape=(32,))
            history.append(x)
        root = b.op("SumBackward0", [x], source=f"{src}:20", shape=())
    elif kind == "wide":
        terms: list[int] = []
        for i in range(max(1, (nodes - 1) // 5)):
            p = b.leaf(f"p{i}", (4,), source=f"{src}:3")
            y = b.op("MulBackward0", [p, None], saved=((4,),), source=f"{src}:5", shape=(4,))
            y = b.op("ExpBackward0", [y], saved=((4,),), source=f"{src}:6", shape=(4,))
            terms.append(b.op("SumBackward0", [y], source=f"{src}:7", shape=()))
        acc = terms[0]
        for t in terms[1:]:
            acc = b.op("AddBackward0", [acc, t], source=f"{src}:8", shape=())
        root = acc
    else:
        raise ValueError(f"unknown graph kind {kind!r} (mlp, chain, wide)")
    if run:
        b.backward(root)
    return b


# --- long traces for replay benchmarks --------------------------------------------------------


def synthetic_trace(n_events: int = 1_000_000, *, width: int = 8, depth: int = 6) -> Trace:
    """A trace of at least ``n_events`` events: training steps, one backward each.

    Every step builds ``depth`` layers of ``width`` ops over ``width`` persistent parameters;
    each op reads two ops of the layer below, so InputBuffers of one slot take two gradients
    and nodes park in not_ready, as in a real network with shared activations.
    """
    b = TraceBuilder(argv=("synthetic-steps", str(n_events)))
    params = [b.leaf(f"w{i}", (4,), source="synthetic_steps.py:3") for i in range(width)]
    while len(b.events) < n_events:
        layer = [
            b.op("MulBackward0", [params[i], params[(i + 1) % width]], saved=((4,), (4,)),
                 source="synthetic_steps.py:6", shape=(4,))
            for i in range(width)
        ]
        for _ in range(depth - 1):
            layer = [
                b.op("AddBackward0", [layer[i], layer[(i + 1) % width]], source="synthetic_steps.py:8",
                     shape=(4,))
                for i in range(width)
            ]
        root = b.op("SumBackward0", layer, source="synthetic_steps.py:10", shape=())
        b.backward(root)
    return b.trace()
