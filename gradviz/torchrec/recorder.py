"""Record real PyTorch's autograd engine into a gradviz trace.

    with gradviz.trace("run.trace.json", engine="torch"):
        loss.backward()

While recording, ``torch.autograd.backward`` and ``torch.autograd.grad`` (which
``Tensor.backward`` and reentrant ``checkpoint`` call) are wrapped. Each call becomes a task: the
graph is walked from its roots through ``next_functions``, a pre-hook and a post-hook go on every
node (AccumulateGrad included) and come off when the call returns, whatever happens.

What a hook sees is OBSERVED: a node starting (pre-hook, with its thread), a node ending and the
gradients it hands on (post-hook), a leaf's ``.grad`` before and after, errors. What the recorder
works out from the graph and that order is DERIVED, and listed in ``derived`` events: the
dependency counts' decrements, which InputBuffer slot a gradient lands in and whether it was set
or accumulated, the ready queue's pushes and pops (torch's engine shows neither), saved-tensor
releases, a GraphRoot for several roots, captures of grad(). A forward ``TorchFunctionMode``
notes each node's source line.

Saved tensors are read from each node's ``_saved_*`` attributes when the node is announced
(shapes only: observed), and their release after a node ran without retain_graph is DERIVED.
``saved_tensors_hooks`` are deliberately not used: with any pack hook registered torch stops
checking that a saved tensor was not modified in place, so a program torch would stop with an
error would run on, recorded, with wrong gradients; and a pack hook that returns a saved output
itself makes a reference cycle through C++ that leaks the graph (tests/test_torchrec_memory.py).

Nothing of the user's is held: nodes are known by (sequence_nr, name) or by their leaf, leaves
by weak reference, and a task's nodes are forgotten when it ends without retain_graph.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import platform
import sys
import threading
import time
import weakref
from typing import Any

import numpy as np
import torch

from gradviz.torchrec import _graph as g
from gradviz.torchrec import distributed as _dist
from gradviz.torchrec._nodes import _edge, _leaf_edges, _NodeIds, _Root
from gradviz.trace import events as ev
from gradviz.trace.model import Trace

_lock = threading.Lock()
_active: TorchRecorder | None = None


class _Task:
    __slots__ = ("id", "depth", "keep", "needed", "deps", "filled", "handles", "tid", "queue", "ran",
                 "running", "captured", "accumulate", "parked", "single", "hooked", "queued")  # fmt: skip

    def __init__(self, tid: int, depth: int, keep: bool, accumulate: bool, queue: int):
        self.id = 0
        self.tid, self.depth, self.keep, self.accumulate, self.queue = tid, depth, keep, accumulate, queue
        self.needed: set[Any] | None = None  # None: every node runs (no grad()/inputs=)
        self.deps: dict[Any, int] = {}
        self.filled: dict[Any, set[int]] = {}  # node -> InputBuffer slots holding a gradient
        self.handles: list[Any] = []
        self.ran: list[Any] = []
        self.parked: set[Any] = set()  # nodes whose InputBuffer waits in not_ready
        self.single: dict[Any, Any] = {}  # node -> stats of its buffer's one gradient (None: several)
        self.running: list[Any] = []
        self.captured: list[tuple[Any, int, int]] = []  # (node, input_nr, output index)
        self.hooked: set[Any] = set()  # the nodes this task hooks
        self.queued: dict[Any, tuple[int, str]] = {}  # node -> the ready queue it was pushed to, its device


class TorchRecorder:
    """A recording of torch's engine: ``start()``/``stop()`` or ``with``; ``trace`` afterwards."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, values: bool = False):
        self.path = None if path is None else os.fspath(path)
        self.values = values
        self.events: list[ev.Event] = []
        self._derived: list[int] = []
        self._elock = threading.RLock()
        self._nodes = _NodeIds()  # torch node -> gradviz node id, holding no node
        self._nsaved: dict[int, int] = {}  # node id -> how many tensors it saved
        self._tensors: dict[int, tuple[Any, int]] = {}  # id(leaf) -> (weakref to the leaf, tensor id)
        self._tensor_ids = 0
        self._threads: dict[int, int] = {}  # thread ident -> tid
        self._queues: dict[int | str, int] = {}  # caller tid, or a device ("cuda:0") -> queue id
        self._running: list[_Task] = []  # tasks begun and not yet ended (any thread)
        self._ready: dict[int, list[tuple[tuple[int, int, int], int, Any]]] = {}  # queue -> (prio, task, node)
        self._sources: dict[tuple[int, str], str | None] = {}  # g.source_key(node) -> "file:line"
        self._tls = threading.local()
        self._task_ids = 0
        self._mode: g.SourceMode | None = None
        self._saved: dict[str, Any] = {}
        self._started = self._closed = False
        self.status = "ok"
        self._trace: Trace | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> TorchRecorder:
        global _active
        from gradviz.trace import recorder as own

        with _lock:
            if _active is not None or own.active() is not None:
                raise RuntimeError("a gradviz recording is already active")
            if self._started:
                raise RuntimeError("this recorder has already been used; make a new one")
            self._started = True
            self._t0 = time.perf_counter_ns()
            tid = self._tid()
            self._emit_raw(ev.TraceBegin, 1, format_version=ev.FORMAT_VERSION, gradviz_version=_version(),
                           numpy_version=np.__version__, python_version=platform.python_version(),
                           platform=f"{sys.platform}-{platform.machine()}", devices=("cpu",),
                           argv=tuple(sys.argv), pid=os.getpid(), values=self.values,
                           **_dist.header_fields())  # fmt: skip  # ddp: rank, local rank, world size, backend
            self._thread_start(tid, threading.current_thread(), "caller")
            self._emit(ev.EngineInfo, engine="torch", torch_version=torch.__version__)
            self._dist = _dist.DistObserver(self._dist_sink())  # ddp: collectives, DDP buckets
            self._dist.start()  # ddp
            self._saved = {"backward": torch.autograd.backward, "grad": torch.autograd.grad}
            torch.autograd.backward = self._wrap(self._saved["backward"], accumulate=True)
            torch.autograd.grad = self._wrap(self._saved["grad"], accumulate=False)
            self._mode = g.SourceMode(self._sources)
            self._mode.__enter__()
            _active = self
        return self

    def stop(self, status: str = "ok", error: BaseException | None = None) -> None:
        global _active
        with _lock:
            if self._closed or not self._started:
                return
            torch.autograd.backward = self._saved["backward"]
            torch.autograd.grad = self._saved["grad"]
            if getattr(self, "_dist", None) is not None:  # ddp: unwrap; the last iteration's ddp_grads
                self._dist.stop()
            if self._mode is not None:
                try:
                    self._mode.__exit__(None, None, None)
                except Exception:  # noqa: BLE001 - a mode left mismatched by the script: ours is off anyway
                    pass
            text = None
            if error is not None:
                text = f"{type(error).__name__}: {error}"
                self._emit(ev.Error, task=None, node=None, type=type(error).__name__, message=str(error))
            self._flush_derived()
            self._emit(ev.TraceEnd, status=status, events=len(self.events), error=text)
            self.status = status
            self._closed = True
            _active = None
            self._nodes.clear()  # release the user's graphs
            self._sources.clear()
            self._tensors.clear()
        if self.path is not None:
            from gradviz.trace.file import save

            save(self.events, self.path)

    def __enter__(self) -> TorchRecorder:
        return self.start()

    def __exit__(self, tp: Any, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, KeyboardInterrupt):
            self.stop("interrupted")
        else:
            self.stop("error" if exc is not None else "ok", exc)

    @property
    def count(self) -> int:
        return len(self.events)

    @property
    def trace(self) -> Trace:
        if not self._closed:
            return Trace(list(self.events), truncated=True)
        if self._trace is None:
            self._trace = Trace(self.events, path=self.path)
        return self._trace

    # -- events --------------------------------------------------------------------------------
    def _now(self) -> int:
        return time.perf_counter_ns() - self._t0

    def _emit_raw(self, cls: type[ev.Event], tid: int, derived: bool = False, **fields: Any) -> int:
        with self._elock:
            seq = len(self.events)
            self.events.append(cls(seq=seq, ts=self._now(), tid=tid, **fields))
            if derived:
                self._derived.append(seq)
            return seq

    def _emit(self, cls: type[ev.Event], derived: bool = False, **fields: Any) -> int:
        return self._emit_raw(cls, self._tid(), derived, **fields)

    def _dist_sink(self) -> _dist.Sink:  # ddp: the distributed observer's interface to the recorder
        def emit(cls: type[ev.Event], **fields: Any) -> int:
            with self._elock:  # a collective's future completes on the backend's own thread
                return self._emit_raw(cls, self._tid("comm"), **fields)

        return _dist.Sink(emit, lambda t, name: self._leaf(t, {id(t): name}), self._now)

    def _flush_derived(self) -> None:
        if self._derived:
            seqs, self._derived = tuple(self._derived), []
            self._emit(ev.Derived, events=seqs)

    def _tid(self, role: str = "device_worker", device: str | None = None) -> int:
        """This thread's id, announced the first time it is seen (``device``: the device a
        worker serves, known when its first node runs)."""
        ident = threading.get_ident()
        tid = self._threads.get(ident)
        if tid is None:
            tid = self._threads[ident] = len(self._threads) + 1
            if self.events:  # the first thread is announced after trace_begin
                self._thread_start(tid, threading.current_thread(), role, device)
        return tid

    def _thread_start(self, tid: int, thread: threading.Thread, role: str, device: str | None = None) -> None:
        self._emit_raw(ev.ThreadStart, tid, name=thread.name, device=device, role=role)

    def _queue(self, tid: int) -> int:
        q = self._queues.get(tid)
        if q is None:
            q = self._queues[tid] = len(self._queues) + 1
            self._ready[q] = []
            name = threading.current_thread().name  # made by the thread that calls backward
            self._emit(ev.QueueCreated, True, queue=q, device="cpu", owner=tid, name=f"cpu@{name}")
        return q

    def _device_queue(self, device: str) -> int:
        """The ready queue of a device's worker thread (torch: one per device, made at first use);
        its owner is the worker, which the recorder sees only once it runs a node."""
        q = self._queues.get(device)
        if q is None:
            q = self._queues[device] = len(self._queues) + 1
            self._ready[q] = []
            self._emit(ev.QueueCreated, True, queue=q, device=device, owner=None, name=device)
        return q

    def _node(self, node: Any, topo: dict[Any, int], names: dict[int, str]) -> int:
        nid = self._nodes.get(node)
        if nid is not None:
            return nid
        tensor = None
        var = getattr(node, "variable", None)
        if var is not None:
            tensor = self._leaf(var, names)
        nid = self._nodes[node] = self._nodes.fresh()
        saved = g.saved_shapes(node)
        self._nsaved[nid] = len(saved)
        self._emit(ev.NodeCreated, node=nid, name=g.node_name(node), sequence_nr=node._sequence_nr(),
                   topological_nr=topo.get(node, 0), num_inputs=g.num_inputs(node),
                   num_outputs=len(node.next_functions), device=g.device_of(node),
                   saved=saved, source=self._sources.get(g.source_key(node)), tensor=tensor)  # fmt: skip
        return nid

    def _edges(self, node: Any) -> None:
        src = self._nodes[node]
        for slot, (f, nr) in enumerate(node.next_functions):
            self._emit(ev.EdgeCreated, src=src, slot=slot, dst=None if f is None else self._nodes[f], input_nr=nr)

    def _leaf(self, t: torch.Tensor, names: dict[int, str]) -> int:
        known = self._tensors.get(id(t))
        if known is not None and known[0]() is t:
            return known[1]
        self._tensor_ids += 1
        tid = self._tensor_ids
        # weakly: a leaf the script drops (a batch's input) goes, and with it its entries, before
        # Python can give its id to another tensor
        self._tensors[id(t)] = (weakref.ref(t, functools.partial(self._gone, id(t))), tid)
        self._emit(ev.TensorCreated, tensor=tid, name=names.get(id(t)), shape=tuple(t.shape),
                   dtype=g.dtype_name(t.dtype), device=str(t.device), source=None)  # fmt: skip
        return tid

    def _stack(self) -> list[_Task]:
        s = getattr(self._tls, "tasks", None)
        if s is None:
            s = self._tls.tasks = []
        return s

    # -- a backward / grad call: one task ---------------------------------------------------------
    def _wrap(self, fn: Any, accumulate: bool) -> Any:
        sig = inspect.signature(fn)
        rec = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if rec._closed:
                return fn(*args, **kwargs)
            try:
                b = sig.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)  # torch's own error for bad arguments
            return rec._run(fn, b, accumulate)

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        wrapper._gradviz_entry = True  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(fn, "__name__", "backward")
        wrapper.__doc__ = fn.__doc__
        return wrapper

    def _run(self, fn: Any, b: inspect.BoundArguments, accumulate: bool) -> Any:
        a = b.arguments
        outs = a.get("tensors" if accumulate else "outputs")
        outs = [outs] if isinstance(outs, (torch.Tensor, torch.autograd.graph.GradientEdge)) else list(outs)
        grads = a.get("grad_tensors" if accumulate else "grad_outputs")
        grads = [None] * len(outs) if grads is None else [grads] if isinstance(grads, torch.Tensor) else list(grads)
        create = bool(a.get("create_graph", False))
        keep = a.get("retain_graph")
        keep = create if keep is None else bool(keep)
        inputs = a.get("inputs")
        if inputs is not None and isinstance(inputs, (torch.Tensor, torch.autograd.graph.GradientEdge)):
            inputs = [inputs]
        inputs = list(inputs) if inputs else []
        try:
            roots = [_edge(t) for t in outs]
            targets = [_edge(t) for t in inputs]
        except Exception:  # noqa: BLE001 - torch reports the user's mistake itself
            return fn(*b.args, **b.kwargs)
        task = self._begin(roots, grads, outs, targets, keep, create, accumulate)
        error: BaseException | None = None
        result = None
        try:
            result = fn(*b.args, **b.kwargs)
            return result
        except BaseException as e:
            error = e
            raise
        finally:
            self._end(task, error, result)

    def _begin(self, roots: list[tuple[Any, int]], grads: list[Any], outs: list[Any],
               targets: list[tuple[Any, int]], keep: bool, create: bool, accumulate: bool) -> _Task:  # fmt: skip
        frame = g.user_frame(1)
        names = g.leaf_names(frame)
        stack = self._stack()
        with self._elock:
            tid = self._tid("caller")  # a thread first seen calling backward is a caller
            queue = self._queue(tid)
            depth = stack[-1].depth + 1 if stack else 0
            task = _Task(tid, depth, keep, accumulate, queue)
            self._task_ids += 1
            task.id = self._task_ids
            roots = _leaf_edges(roots, [])
            root_nodes = [n for n, _ in roots if n is not None]
            nodes = g.walk(root_nodes)
            targets = _leaf_edges(targets, nodes)
            topo = g.topological_nrs(nodes)
            new = [n for n in nodes if n not in self._nodes]
            for n in reversed(new):  # children first: a node's edges name announced nodes
                self._node(n, topo, names)
            for n in reversed(new):
                self._edges(n)
            graph_root = None
            if len(roots) > 1:  # torch makes a GraphRoot no hook can see
                graph_root = self._nodes.fresh()
                seq = max((n._sequence_nr() for n in nodes if not g.is_accumulate(n)), default=-1) + 1
                self._emit(ev.NodeCreated, True, node=graph_root, name="GraphRoot", sequence_nr=seq,
                           topological_nr=1 + max((topo[n] for n in root_nodes), default=-1), num_inputs=0,
                           num_outputs=len(roots), device="cpu", saved=(), source=None)  # fmt: skip
                for slot, (n, nr) in enumerate(roots):
                    self._emit(ev.EdgeCreated, True, src=graph_root, slot=slot,
                               dst=None if n is None else self._nodes[n], input_nr=nr)  # fmt: skip
            for n, _ in targets:  # an input the graph does not reach is still named in exec_info
                if n is not None and n not in self._nodes:
                    self._node(n, topo, names)
            tnodes = {n for n, _ in targets if n is not None}
            min_topo = min((topo.get(n, 0) for n in tnodes), default=0)
            self._emit(ev.TaskBegin, task=task.id,
                       roots=tuple((self._nodes[n], nr) for n, nr in roots if n is not None),
                       graph_root=graph_root, keep_graph=keep, create_graph=create, accumulate_grad=accumulate,
                       outputs=tuple((self._nodes[n], nr) for n, nr in targets if n is not None),
                       reentrant_depth=depth, owner=tid, cpu_queue=queue)  # fmt: skip
            start: Any = _Root(roots) if len(roots) > 1 else (root_nodes[0] if root_nodes else _Root([]))
            topo[start] = topo.get(start, 1 << 62) if isinstance(start, _Root) else topo[start]
            deps = g.dependencies(start, topo, min_topo)
            task.deps = deps
            self._emit(ev.Dependencies, True, task=task.id,
                       counts=tuple((self._nodes[n], c) for n, c in deps.items()))  # fmt: skip
            if tnodes:
                needed = g.exec_info(start, tnodes, accumulate, topo, min_topo)
                needed.discard(start)
                if not isinstance(start, _Root) and (accumulate or not g.is_accumulate(start)):
                    needed.add(start)  # (grad(v, v): torch captures the leaf root's gradient, runs nothing)
                task.needed = needed
                if not accumulate:
                    task.captured = [(n, nr, i) for i, (n, nr) in enumerate(targets) if n is not None]
                self._emit(ev.ExecInfo, True, task=task.id, needed=tuple(sorted(self._nodes[n] for n in needed)),
                           captured=tuple((self._nodes[n], nr, i) for n, nr, i in task.captured))  # fmt: skip
            for n in nodes:
                task.handles.append(n.register_prehook(self._pre(task, n)))
                task.handles.append(n.register_hook(self._post(task, n)))
            task.hooked = set(nodes)
            stack.append(task)
            self._running.append(task)
            # the root gradients: GraphRoot hands them on, or the one root's buffer starts with it
            if graph_root is not None:
                self._emit(ev.NodeBegin, True, task=task.id, node=graph_root, depth=depth)
                self._emit(ev.NodeEnd, True, task=task.id, node=graph_root, status="ok")
            for (n, nr), gr, out in zip(roots, grads, outs):
                if n is None:
                    continue
                if gr is None and isinstance(out, torch.Tensor):
                    with g.Busy():
                        gr = torch.ones_like(out)
                self._hand(task, n, nr, gr, graph_root if graph_root is not None else None)
        return task

    def _hand(self, task: _Task, node: Any, slot: int, grad: Any, producer: int | None) -> None:
        """A gradient reaches node's InputBuffer: derived decrement, add, and push when ready."""
        nid = self._nodes[node]
        if producer is not None:
            left = task.deps.get(node, 1) - 1
            task.deps[node] = left
            self._emit(ev.DependencyDecrement, True, task=task.id, node=nid, by=producer, remaining=left)
        else:
            left = 0
        if task.needed is not None and node not in task.needed and not any(c[0] is node for c in task.captured):
            return  # torch skips the buffer of a node that will not run
        filled = task.filled.setdefault(node, set())
        mode = "undefined" if grad is None else "accumulate" if slot in filled else "set"
        if grad is not None:
            filled.add(slot)
        st = g.stats(grad)
        # a leaf's AccumulateGrad given one gradient sets .grad to those values: its statistics
        # are these, and need no second pass over a weight-sized tensor
        lone = mode == "set" and node not in task.single and grad.layout == torch.strided
        task.single[node] = (st, grad.data_ptr()) if lone else None
        self._emit(ev.BufferAdd, True, task=task.id, node=nid, slot=slot, mode=mode, producer=producer,
                   shape=None if grad is None else tuple(grad.shape),
                   dtype=None if grad is None else g.dtype_name(grad.dtype),
                   device=None if grad is None else str(grad.device), stats=st,
                   values=g.values(grad) if self.values else None)  # fmt: skip
        if left > 0 and mode != "undefined" and len(filled) == 1 and node not in task.parked:
            task.parked.add(node)
            self._emit(ev.NotReadyPark, True, task=task.id, node=nid, remaining=left)
        if left == 0:
            if node in task.parked:
                task.parked.discard(node)
                self._emit(ev.NotReadyTake, True, task=task.id, node=nid)
            # torch's ready_queue(cpu_queue, buffer.device()): a buffer holding a device's gradient
            # goes to that device's worker; any other to the task's own CPU queue
            dev = "cpu" if grad is None or grad.device.type == "cpu" else str(grad.device)
            qid = task.queue if dev == "cpu" else self._device_queue(dev)
            task.queued[node] = (qid, dev)
            q = self._ready[qid]
            prio = (ev.PRIORITY_NODE, task.depth, node._sequence_nr())
            q.append((prio, task.id, node))
            self._emit(ev.QueuePush, True, queue=qid, device=dev, task=task.id, node=nid, what="node",
                       priority=prio, size=len(q))  # fmt: skip
            if task.needed is not None and node not in task.needed:
                self._pop(task, node)  # captured only: popped, its input captured, not run

    def _pop(self, task: _Task, node: Any) -> None:
        qid, dev = task.queued.pop(node, (task.queue, "cpu"))
        q = self._ready[qid]
        prio = (ev.PRIORITY_NODE, task.depth, node._sequence_nr())
        for i, (_, t, n) in enumerate(q):
            if n is node and t == task.id:
                prio = q.pop(i)[0]
                break
        self._emit(ev.QueuePop, True, queue=qid, device=dev, task=task.id, node=self._nodes[node],
                   what="node", priority=prio, size=len(q))  # fmt: skip

    def _mine(self, task: _Task, node: Any) -> bool:
        """Whether this hook's task is the one running ``node`` here: the innermost task of the
        thread that began it; on a thread that began none (torch's device worker), the one running
        task that hooks the node."""
        s = getattr(self._tls, "tasks", None)
        if s:
            return s[-1] is task
        return [t for t in self._running if node in t.hooked] == [task]

    def _pre(self, task: _Task, node: Any) -> Any:
        def pre(grad_outputs: Any) -> None:
            if not self._mine(task, node):
                return None
            if task.needed is not None and node not in task.needed:
                return None  # a leaf's tensor hook on a gradient grad() captures: the node never runs
            with self._elock:
                if not getattr(self._tls, "tasks", None):
                    # a thread that began no task and runs its nodes: torch's worker for a device
                    self._tid("device_worker", g.device_of(node))
                self._pop(task, node)
                nid = self._nodes[node]
                self._emit(ev.NodeBegin, task=task.id, node=nid, depth=task.depth)
                task.ran.append(node)
                var = getattr(node, "variable", None)
                task.running.append((node, None if var is None or var.grad is None else g.stats(var.grad)))
            return None

        return pre

    def _post(self, task: _Task, node: Any) -> Any:
        def post(grad_inputs: Any, grad_outputs: Any) -> None:
            if not self._mine(task, node):
                return None
            with self._elock:
                _, before = task.running.pop() if task.running else (node, None)
                nid = self._nodes[node]
                var = getattr(node, "variable", None)
                if var is not None and task.accumulate:
                    after = var.grad
                    one = task.single.get(node) if before is None and after is not None else None
                    # .grad is the very tensor handed on (torch steals a lone gradient): same values
                    stolen = one is not None and after.layout == torch.strided and after.data_ptr() == one[1]
                    st = one[0] if stolen else g.stats(after)
                    self._emit(ev.AccumulateGradUpdate, task=task.id, node=nid, tensor=self._leaf(var, {}),
                               mode="set" if before is None else "accumulate", before=before,
                               after=st or ev.Stats(0.0, 0.0, 0.0, 0, 0),
                               values=g.values(after) if self.values else None)  # fmt: skip
                self._emit(ev.NodeEnd, task=task.id, node=nid, status="ok")
                if not task.keep:
                    n_saved = self._nsaved.get(nid, 0)
                    if n_saved:
                        self._emit(ev.SavedRelease, True, node=nid, count=n_saved)
                for (f, nr), gi in zip(node.next_functions, grad_inputs):
                    if f is not None:
                        self._hand(task, f, nr, gi, nid)
            return None

        return post

    def _end(self, task: _Task, error: BaseException | None, result: Any) -> None:
        for h in task.handles:
            h.remove()
        task.handles.clear()
        stack = self._stack()
        if stack and stack[-1] is task:
            stack.pop()
        with self._elock:
            if task.captured and error is None and result is not None:
                res = result if isinstance(result, (tuple, list)) else (result,)
                for n, nr, i in task.captured:
                    gi = res[i] if i < len(res) else None
                    self._emit(ev.CapturedGrad, True, task=task.id, node=self._nodes[n], input_nr=nr, index=i,
                               stats=g.stats(gi), values=g.values(gi) if self.values else None)  # fmt: skip
            queued = [x for qid in {task.queue, *(q for q, _ in task.queued.values())} for x in self._ready[qid]
                      if x[1] == task.id]  # fmt: skip
            # The engine ran to its end and the call raised afterwards (grad()'s allow_unused
            # check, in run_backward once execute returned): the task ended ok, then the call
            # failed, in that order, as gradviz's own recorder has it. Seen here as an error with
            # no node running and nothing of the task left to run, after its nodes ran.
            after = error is not None and task.ran and not task.running and not queued
            if error is not None and not after:
                self._error(task, error)
            # what torch never ran stays queued in its simulation: drop it (the task is over)
            for q in self._ready.values():
                q[:] = [x for x in q if x[1] != task.id]
            if task in self._running:
                self._running.remove(task)
            failed = error is not None and not after
            self._emit(ev.TaskEnd, task=task.id, status="error" if failed else "ok",
                       error=f"{type(error).__name__}: {error}" if failed else None)  # fmt: skip
            if after:
                self._emit(ev.Error, task=task.id, node=None, type=type(error).__name__, message=str(error),
                           forward=None)  # fmt: skip
            if not task.keep:
                self._forget(task)
            if not stack:
                self._flush_derived()

    def _gone(self, key: int, ref: Any) -> None:
        known = self._tensors.get(key)
        if known is not None and known[0] is ref:
            del self._tensors[key]
            self._nodes.drop_leaf(key)

    def _forget(self, task: _Task) -> None:
        """What torch freed, the recorder forgets: a node that ran without retain_graph cannot run
        again (its saved tensors are gone), so its id, saved count and source line go, and a long
        training script keeps only its leaves' ids (holding no node or tensor at any time)."""
        for n in task.ran:
            if g.is_accumulate(n):
                continue  # a parameter's node: the same id every step
            nid = self._nodes.drop(n)
            if nid is not None:
                self._nsaved.pop(nid, None)
                self._sources.pop(g.source_key(n), None)
        if len(self._sources) > _MAX_SOURCES:  # lines of forward ops no backward ever reached
            try:
                for k in list(itertools.islice(self._sources, len(self._sources) // 2)):
                    self._sources.pop(k, None)
            except RuntimeError:  # another thread's forward added one meanwhile: next time
                pass

    def _error(self, task: _Task, error: BaseException) -> None:
        msg = str(error)
        node = None
        if task.running:  # raised inside a node: its pre-hook ran, its post-hook did not
            node = task.running.pop()[0]
            task.running.clear()
            self._emit(ev.NodeEnd, True, task=task.id, node=self._nodes[node], status="error")
        elif msg.startswith("Function '") and "nan values" in msg:  # anomaly mode, checked after the node ran
            name = msg.split("'")[1]
            node = next((n for n in reversed(task.ran) if n.name() == name or g.node_name(n) == name), None)
        forward = None
        if node is not None:
            forward = g.anomaly_traceback(node) or self._sources.get(g.source_key(node))
            if msg.startswith("Function '") and "nan values" in msg:
                self._emit(ev.Anomaly, task=task.id, node=self._nodes[node], message=msg, forward=forward)
        self._emit(ev.Error, task=task.id, node=None if node is None else self._nodes[node],
                   type=type(error).__name__, message=msg, forward=forward)  # fmt: skip


_MAX_SOURCES = 100_000


def _version() -> str:
    import gradviz

    return gradviz.__version__


def active() -> TorchRecorder | None:
    return _active


def trace(path: str | os.PathLike[str], *, values: bool = False) -> TorchRecorder:
    """Record torch's engine to a file: ``with gradviz.trace(path, engine="torch"): ...``."""
    return TorchRecorder(path, values=values)


def record(*, values: bool = False) -> TorchRecorder:
    """Record torch's engine in memory; ``rec.trace`` when done."""
    return TorchRecorder(None, values=values)
