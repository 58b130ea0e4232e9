"""Real PyTorch's autograd engine as a source of gradviz's one recorder.

    with gradviz.trace("run.trace.json", engine="torch"):
        loss.backward()

``TorchSource`` drives ``gradviz.trace.recorder.Recorder`` through the Probe's methods, with
torch's nodes, leaves and queues as adapters (gradviz.torchrec.adapters): the trace is written
by the same writer as gradviz's own engine's, streamed, crash-safe, with one header and one
lifecycle.

While recording, ``torch.autograd.backward`` and ``torch.autograd.grad`` (which
``Tensor.backward`` and reentrant ``checkpoint`` call) are wrapped. Each call becomes a task:
the graph is walked from its roots through ``next_functions``, a post-hook goes on every node
(AccumulateGrad included), a pre-hook on the nodes whose start tells something the end cannot (a
leaf's AccumulateGrad, a custom Function's node, the task's first node), and they come off when
the call returns, whatever happens.

What a hook sees is OBSERVED: a node starting (pre-hook, with its thread), a node ending and the
gradients it hands on (post-hook), a leaf's ``.grad`` before and after, errors. What the source
works out is DERIVED and listed in ``derived`` events: the start of a node with no pre-hook (when
it ends, a hook of the user's runs on it, or it raised), the dependency counts and exec_info (the
engine's own compute_dependencies and init_to_execute, run over the adapters), the counts'
decrements, which InputBuffer slot a gradient lands in and whether it was set or accumulated,
the ready queues' pushes and pops (torch's engine shows neither), saved-tensor releases, a
GraphRoot for several roots, captures of grad().

Saved tensors are read from each node's ``_saved_*`` attributes when it is announced (shapes
only), and their release after a node ran without retain_graph is derived. ``saved_tensors_hooks``
are deliberately not used: with a pack hook registered torch stops checking that a saved tensor
was not modified in place, and a pack hook returning a saved output leaks the graph through C++
(tests/torchrec/test_torchrec_memory.py).

Nothing of the user's is held past a call: torch's nodes only while their call runs, leaves by
weak reference, and a node's id is kept across calls only while its graph is retained.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import os
import threading
import time
import weakref
from collections import OrderedDict
from typing import Any

import torch

from gradviz.autograd.engine import compute_dependencies, compute_min_topological_nr
from gradviz.autograd.graph_task import GraphTask
from gradviz.torchrec import distributed as _dist  # ddp
from gradviz.torchrec import lines
from gradviz.torchrec.adapters import (
    LeafTensor,
    NodeTask,
    RootNode,
    StandInLeaf,
    TorchLeafNode,
    TorchNode,
    TorchQueue,
    build,
    full_name,
)
from gradviz.torchrec.forward import ForwardSide
from gradviz.torchrec.hooks import HookPatches
from gradviz.torchrec.names import LeafNames
from gradviz.torchrec.summaries import fields, leave_thread_alone, stats, summary
from gradviz.trace import events as ev
from gradviz.trace.recorder import Recorder, active, guard  # noqa: F401 - gradviz.torchrec.active
from gradviz.trace.summaries import Summary

_ZERO = (0.0, 0.0, 0.0, 0, 0)
_HAS_VARIABLE: dict[type, bool] = {}  # a torch node class -> whether its nodes may have a leaf (variable)
_FIELDS: dict[type, tuple[str, ...]] = {}  # an event class -> its fields after seq, ts and tid
_now = time.perf_counter_ns  # the recorder's clock (Recorder.now: _now() - its _t0)
_current_node = torch._C._current_autograd_node  # the node the calling engine thread evaluates


class _Call:
    """The source's state of one backward/grad call (one task): the GraphTask the probe is
    told about, the adapters of the nodes it reaches, and its simulated buffers and queues."""

    __slots__ = ("gt", "nodes", "filled", "handles", "ran", "running", "parked", "single", "queued",
                 "captured", "root", "own", "by_key", "leaf_of", "first", "last_ts")

    def __init__(self, gt: GraphTask):
        self.gt = gt
        self.nodes: dict[int, TorchNode] = {}  # id(torch node) -> adapter
        self.filled: dict[TorchNode, int] = {}  # node -> InputBuffer slots holding a gradient (bits)
        self.handles: list[Any] = []
        self.ran: list[TorchNode] = []
        self.running: list[tuple[TorchNode, Any]] = []  # (node, Summary of its leaf's .grad before)
        self.parked: set[TorchNode] = set()  # nodes whose InputBuffer waits in not_ready
        self.single: dict[TorchNode, Any] = {}  # node -> (Summary, data_ptr) of its buffer's one gradient
        self.queued: dict[TorchNode, TorchQueue] = {}  # node -> the ready queue it was pushed to
        self.captured: list[tuple[TorchNode, int, int]] = []  # (node, input_nr, output index)
        self.root: TorchNode | None = None
        self.own: tuple[Any, ...] = ()  # this call's shared pre-hook and post-hook
        # (sequence_nr, name) -> node, for user hooks on tensors (made when one first runs)
        self.by_key: dict[tuple[int, str], TorchNode] | None = None
        self.leaf_of: dict[int, TorchLeafNode] = {}  # id(leaf) -> its AccumulateGrad
        self.first: tuple[TorchNode, ...] = ()  # the nodes the root gradients go to (torch runs one first)
        # when the last node ended (its post-hook), or the task began: the latest a node whose
        # start no pre-hook saw can have started, and the time its derived node_begin gets
        self.last_ts = 0


class TorchSource(ForwardSide):  # ForwardSide: gradviz why's forward-side events (forward.py)
    """Observes torch's engine and reports each step to a Recorder (see the module docstring)."""

    def __init__(self, values: bool = False) -> None:
        self.values = values
        self._rec: Recorder | None = None
        # _lock protects: everything below, and the order of the recorder's events (a derived
        # range is the events emitted between two counts, so no other step may come between)
        self._lock = threading.RLock()
        self._ids = 0  # the last node id given
        self._task_ids = 0
        self._tensor_ids = 0
        self._leaves: dict[int, tuple[Any, LeafTensor, int]] = {}  # id(leaf) -> (weakref, LeafTensor, node id)
        self._kept: dict[tuple[int, int, str], int] = {}  # a retained graph's node (line_key) -> its id
        self._dead: list[int] = []  # node ids of leaves freed since the last call ended
        self._queues: dict[Any, TorchQueue] = {}  # thread ident or device -> its ready queue
        self._running: list[_Call] = []  # calls begun and not yet ended (any thread)
        self._lines: dict[tuple[int, int, str], lines.Site] = {}
        self._tls = threading.local()
        self._names = LeafNames()
        self._hooks = HookPatches(self._hook_seen)
        self._mode: lines.SourceMode | None = None
        self._mode_pushed = False  # whether _mode is on torch's mode stack (or called by the forward side's)
        self._fwd_mode: Any = None  # forward.py's mode, once started
        self._saved: dict[str, Any] = {}
        self._closed = False
        self._dist: _dist.DistObserver | None = None  # ddp: torch.distributed's collectives, DDP's buckets

    # -- the Source protocol ------------------------------------------------------------------
    def header_fields(self) -> dict[str, Any]:  # ddp: trace_begin's rank fields, the backend among them
        return _dist.header_fields()

    def start(self, rec: Recorder) -> None:
        self._rec = rec
        rec.engine_info("torch", torch.__version__)
        self._dist = _dist.DistObserver(_dist.Sink(rec.emit, self._dist_leaf, rec.now))  # ddp
        self._dist.start()  # ddp
        self._saved = {"backward": torch.autograd.backward, "grad": torch.autograd.grad}
        torch.autograd.backward = self._wrap(self._saved["backward"], accumulate=True)
        torch.autograd.grad = self._wrap(self._saved["grad"], accumulate=False)
        self._saved["Tensor.backward"] = torch.Tensor.__dict__["backward"]
        torch.Tensor.backward = self._tensor_backward(self._saved["Tensor.backward"])
        self._names.start()
        self._hooks.start()
        self._mode = lines.SourceMode(self._lines, None)
        # why: the forward side's mode calls SourceMode's handler for each op (one mode on
        # torch's stack); without the forward side SourceMode is the mode
        self._mode_pushed = not self._fwd_start(self._mode)
        if self._mode_pushed:
            self._mode.__enter__()

    def stop(self, rec: Recorder) -> None:
        if not self._closed:
            self._fwd_done()  # events are still taken: a step the forward side holds goes in first
        if self._dist is not None:  # ddp: first: unwrap, and the last iteration's ddp_grads
            self._dist, d = None, self._dist
            d.stop()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._unpatch()
            self._fwd_stop()  # why
            if self._mode is not None and self._mode_pushed:
                try:
                    self._mode.__exit__(None, None, None)
                except Exception:  # noqa: BLE001 - a mode left mismatched by the script: ours is off anyway
                    pass
            rec.flush_derived()
            self._lines.clear()
            self._leaves.clear()
            self._kept.clear()

    def forget_in_child(self) -> None:
        """In a forked child (a DataLoader worker): the recording is the parent's. torch's
        functions come back, the hooks' patches come off, and this thread's modes leave its
        stack, emitting nothing: a worker's transforms are no steps of the parent's engine."""
        self._lock = threading.RLock()  # a thread of the parent's may have held it at the fork
        self._closed = True
        self._running = []
        if self._dist is not None:  # ddp: its patches off, no iteration closed (that would emit)
            self._dist, d = None, self._dist
            d.forget_in_child()
        self._unpatch()
        self._mode_off()  # ours, while on top of the stack (the child's only thread forked)
        ours = [m for m in (self._mode, self._fwd_mode) if m is not None]
        if any(torch._C._get_function_stack_at(i) in ours for i in range(torch._C._len_torch_function_stack())):
            leave_thread_alone()  # ours below a user's mode: they pass every op through
        self._fwd_mode = self._mode = None
        self._fwd_pending.clear()
        self._lines.clear()
        self._leaves.clear()
        self._kept.clear()

    def _unpatch(self) -> None:
        """torch's backward/grad functions back, and the names' and hooks' patches off."""
        if self._saved:
            torch.autograd.backward = self._saved["backward"]
            torch.autograd.grad = self._saved["grad"]
            torch.Tensor.backward = self._saved["Tensor.backward"]
        self._names.stop()
        self._hooks.stop()

    # -- ids ------------------------------------------------------------------------------------
    def _fresh(self) -> int:
        self._ids += 1
        return self._ids

    # -- what the forward side (forward.py) needs of a source ------------------------------------
    def _emit_raw(self, cls: type, tid: int, **fields: Any) -> None:
        """A forward-side event, through the recorder's one writer (its fields in the event's order)."""
        rec = self._rec
        if rec is None or self._closed:
            return
        names = _FIELDS.get(cls)
        if names is None:
            names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))[3:]  # after seq, ts, tid
        with rec._lock:
            rec._put(cls.kind, tid, *[fields[n] for n in names])

    def _tid(self, role: str) -> int:
        rec = self._rec
        if rec is None:
            return 0
        return rec._local.tid or rec._tid()  # the thread's tid, once known, without the lock

    def _known_leaf_id(self, t: torch.Tensor) -> int | None:
        known = self._leaves.get(id(t))
        return known[1]._id if known is not None and known[0]() is t else None

    def _leaf_node(self, fn: Any, leaf: torch.Tensor, frame: Any) -> TorchLeafNode:
        """A leaf's AccumulateGrad: the same id every call, for as long as the leaf lives."""
        known = self._leaves.get(id(leaf))
        if known is None or known[0]() is not leaf:
            tensor_id = self._fwd_known(leaf)  # why: a tensor the forward side numbered keeps its id
            if tensor_id is None:
                self._tensor_ids += 1
                tensor_id = self._tensor_ids
            lt = LeafTensor(tensor_id, self._names.name(leaf, frame), leaf, stats(leaf))
            ref = weakref.ref(leaf, functools.partial(self._gone, id(leaf)))
            known = self._leaves[id(leaf)] = (ref, lt, self._fresh())
        return TorchLeafNode(fn, known[2], known[1], leaf)

    def _dist_leaf(self, t: torch.Tensor, name: str) -> int:  # ddp: a DDP module's parameter
        """A leaf's tensor id, announced if new: the id it keeps when it joins a graph."""
        with self._lock:
            known = self._leaves.get(id(t))
            if known is None or known[0]() is not t:
                tensor_id = self._fwd_known(t)  # as _leaf_node: the forward side's id, if it gave one
                if tensor_id is None:
                    self._tensor_ids += 1
                    tensor_id = self._tensor_ids
                ref = weakref.ref(t, functools.partial(self._gone, id(t)))
                known = self._leaves[id(t)] = (ref, LeafTensor(tensor_id, name, t, stats(t)), self._fresh())
            assert self._rec is not None
            return self._rec.tensor(known[1], name)

    def _gone(self, key: int, ref: Any) -> None:
        # A weak reference's callback runs wherever the leaf happens to be freed, perhaps inside
        # the recorder with its lock held: the id is only noted here, and forgotten at a call's end.
        known = self._leaves.get(key)
        if known is not None and known[0] is ref:
            self._leaves.pop(key, None)
            self._dead.append(known[2])

    def _adapter(self, fn: Any, frame: Any, ident: int) -> TorchNode:
        """fn's adapter (ident: this thread's, a part of lines.line_key)."""
        cls = type(fn)
        has = _HAS_VARIABLE.get(cls)
        if has is None:  # by class: a getattr that misses raises and catches inside, every node
            has = _HAS_VARIABLE[cls] = hasattr(cls, "variable") or hasattr(fn, "variable")
        if has:
            var = getattr(fn, "variable", None)
            if var is not None:
                return self._leaf_node(fn, var, frame)
        a = TorchNode(fn, 0, lines.NO_SITE)
        key = (ident, a.sequence_nr, full_name(fn))  # lines.line_key(fn), from what the adapter read
        nid = self._kept.get(key) if self._kept else None
        a._id = nid if nid is not None else self._fresh()
        a.source, a.columns = self._lines.pop(key, lines.NO_SITE)
        return a

    def _queue(self, ident: int) -> TorchQueue:
        q = self._queues.get(ident)
        if q is None:
            name = threading.current_thread().name  # made by the thread that calls backward
            q = self._queues[ident] = TorchQueue(len(self._queues) + 1, "cpu", f"cpu@{name}", ident)
        return q

    def _device_queue(self, device: str) -> TorchQueue:
        """A device's worker's queue (torch: one per device, made at first use, announced then:
        derived); its owner is the worker, which the recorder sees only once it runs a node."""
        q = self._queues.get(device)
        if q is None:
            q = self._queues[device] = TorchQueue(len(self._queues) + 1, device, device, None)
            rec = self._rec
            n0 = rec.count
            rec.queue_created(q)
            rec.mark_derived(n0)
        return q

    def _stack(self) -> list[_Call]:
        s = getattr(self._tls, "calls", None)
        if s is None:
            s = self._tls.calls = []
        return s

    # -- a backward / grad call: one task -------------------------------------------------------
    def _wrap(self, fn: Any, accumulate: bool) -> Any:
        sig = inspect.signature(fn)
        src = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if src._closed:
                return fn(*args, **kwargs)
            try:
                try:
                    b = sig.bind(*args, **kwargs)
                except TypeError:
                    return fn(*args, **kwargs)  # torch's own error for bad arguments
                return src._run(fn, b, accumulate)
            except BaseException as e:
                _trim(e)
                raise  # bare: this frame is not added again

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        wrapper._gradviz_entry = True  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(fn, "__name__", "backward")
        wrapper.__qualname__ = getattr(fn, "__qualname__", "backward")
        wrapper.__module__ = getattr(fn, "__module__", "torch.autograd")
        wrapper.__doc__ = fn.__doc__
        return wrapper

    def _tensor_backward(self, orig: Any) -> Any:
        """Tensor.backward while recording: torch's own, called with the forward-line mode off,
        so that torch does not dispatch it to the mode (handle_torch_function and the mode's
        frames would be in a failing backward's traceback, and nowhere unrecorded)."""
        src = self

        def backward(self: torch.Tensor, gradient: Any = None, retain_graph: Any = None, create_graph: bool = False,
                     inputs: Any = None) -> Any:
            try:
                popped = src._mode_off()
                try:
                    return orig(self, gradient, retain_graph, create_graph, inputs)
                finally:
                    for mode in reversed(popped or ()):
                        torch._C._push_on_torch_function_stack(mode)
            except BaseException as e:
                _trim(e)
                raise

        backward.__doc__ = orig.__doc__
        backward.__wrapped__ = orig  # type: ignore[attr-defined]
        return backward

    def _mode_off(self) -> Any:
        """Take the forward-line and forward-side modes off this thread's mode stack while they
        are on top (the user's own modes stay); the modes, to put back, or None."""
        ours = [m for m in (self._mode, self._fwd_mode) if m is not None]
        popped = []
        while (n := torch._C._len_torch_function_stack()) and torch._C._get_function_stack_at(n - 1) in ours:
            popped.append(torch._C._pop_torch_function_stack())
        return popped or None

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
        if isinstance(inputs, (torch.Tensor, torch.autograd.graph.GradientEdge)):
            inputs = [inputs]
        try:
            self._fwd_call(accumulate, outs, list(inputs or ()), keep)  # why: the backward_call event
        except Exception:  # noqa: BLE001 - recording never fails the user's call
            pass
        # The forward-line mode is off while the call runs (torch.autograd.grad dispatches to
        # modes, and the recorder's own summaries are no forward), back on once it returned.
        popped = self._mode_off()
        try:
            call = None
            try:
                call = self._begin(outs, grads, list(inputs or ()), keep, create, accumulate)
            except Exception:  # noqa: BLE001 - recording never fails the user's call: it runs unrecorded
                call = None
            if call is None:
                return fn(*b.args, **b.kwargs)
            error: BaseException | None = None
            result: Any = None
            try:
                result = fn(*b.args, **b.kwargs)
                return result
            except BaseException as e:
                error = e
                raise
            finally:
                self._end(call, error, result)
        finally:
            for mode in reversed(popped or ()):
                torch._C._push_on_torch_function_stack(mode)

    def _begin(self, outs: list[Any], grads: list[Any], inputs: list[Any], keep: bool, create: bool,
               accumulate: bool) -> _Call | None:
        rec = self._rec
        frame = lines.user_frame(1)
        roots = [_edge(t) for t in outs]
        stack = self._stack()
        with self._lock:
            if self._closed or rec is None:
                return None
            depth = stack[-1].gt.reentrant_depth + 1 if stack else 0
            queue = self._queue(threading.get_ident())
            gt = GraphTask(keep, create, accumulate, depth, queue)  # type: ignore[arg-type]
            self._task_ids += 1
            gt.id = self._task_ids
            call = _Call(gt)
            of = call.nodes = build([n for n, _ in roots if n is not None and not isinstance(n, _Leaf)],
                                    self._adapter, frame, threading.get_ident())
            walked = len(of)
            leaf_of = call.leaf_of
            for a in of.values():
                if type(a) is TorchLeafNode:
                    leaf_of[id(a.leaf)] = a
            stand_in: dict[int, TorchLeafNode] = {}  # id(leaf) -> its StandInLeaf, a leaf the walk did not reach

            def edge_of(n: Any, x: Any) -> tuple[TorchNode | None, int]:
                if n is None:
                    return None, 0
                if isinstance(n, _Leaf):  # a leaf: its AccumulateGrad in the graph, or a stand-in
                    a = leaf_of.get(id(x)) or stand_in.get(id(x))
                    if a is None:
                        a = self._leaf_node(StandInLeaf(x), x, frame)
                        of[id(a.fn)] = stand_in[id(x)] = a
                    return a, 0
                return of[id(n)], x

            root_edges = [edge_of(n, x) for n, x in roots]
            targets = [edge_of(*_edge(t)) for t in inputs]
            n0 = rec.count
            if len(root_edges) == 1 and not targets and root_edges[0][0] is not None and len(of) == walked:
                # one root and the graph walked from it: its nodes, each after its successors
                # (link's topological_nr), are what announce(root) would walk and sort
                rec.announce_sorted(sorted(of.values(), key=_topo))
            else:
                for a, _ in root_edges:
                    if a is not None:
                        rec.announce(a)
                for a, _ in targets:  # an input the graph does not reach is still named in exec_info
                    if a is not None:
                        rec.announce(a)
            graph_root: TorchNode
            if len(root_edges) == 1 and root_edges[0][0] is not None:
                graph_root = root_edges[0][0]
                shown_root = None
            else:  # torch makes a GraphRoot no hook can see
                seq = max((a.sequence_nr for a in of.values() if type(a) is TorchNode), default=-1) + 1
                graph_root = shown_root = RootNode(self._fresh(), tuple(root_edges), seq)
                n1 = rec.count
                rec.announce(shown_root)
                rec.mark_derived(n1)
            del n0
            call.root = graph_root
            n1 = rec.count
            rec.queue_created(queue)
            rec.mark_derived(n1)
            gt.outputs = [e for e in targets if e[0] is not None]
            rec.task_begin(gt, [_E(a, nr) for a, nr in root_edges], shown_root, [_E(a, nr) for a, nr in gt.outputs])
            n1 = rec.count
            min_topo = compute_min_topological_nr(gt.outputs) if gt.outputs else 0
            compute_dependencies(graph_root, gt, min_topo)
            rec.dependencies(gt)
            if gt.outputs:
                gt.init_to_execute(graph_root, gt.outputs, accumulate, min_topo)
                rec.exec_info(gt)
                if not accumulate:
                    call.captured = [(a, nr, i) for i, (a, nr) in enumerate(gt.outputs)]
            rec.mark_derived(n1)
            # One pre-hook and one post-hook object for the whole call: each finds its node as
            # torch's engine names it (the node it is evaluating), so a node costs torch's
            # registrations and nothing of ours (no closure, no handle: hooks.HookPatches).
            # A pre-hook only where its moment says something the post-hook cannot (_observed):
            # elsewhere the node's start is derived when it ends (_after), a hook of the user's
            # runs on it (_hook_seen), or it raised (_error).
            call.first = tuple(a for a, _ in root_edges if a is not None)
            pre, post = self._pre(call, None), self._post(call, None)
            own = self._hooks.own
            own.add(pre)
            own.add(post)
            handles = call.handles
            first = call.first
            for a in of.values():
                fn = a.fn
                if fn is None:
                    continue
                if type(fn) is StandInLeaf:  # tensor hooks stand in: no node of torch's to name it
                    handles.append(fn.register_prehook(self._pre(call, a)))
                    handles.append(fn.register_hook(self._post(call, a)))
                else:
                    if type(a) is not TorchNode or not a._defer_safe or a in first:
                        handles.append(fn.register_prehook(pre))
                    handles.append(fn.register_hook(post))
            call.own = (pre, post)
            stack.append(call)
            self._running.append(call)
            n1 = rec.count
            if shown_root is not None:  # the root gradients: GraphRoot hands them on
                rec.node_begin(gt, shown_root, depth)
                rec.node_end(gt, shown_root, True)
            rec.mark_derived(n1)
            rows: list[tuple] = []
            ts, tid, n = rec.now(), self._tid("caller"), 0
            call.last_ts = ts
            for (a, nr), gr, out in zip(root_edges, grads, outs):
                if a is None:
                    continue
                if gr is None and isinstance(out, torch.Tensor):
                    gr = torch.ones_like(out)
                n += self._hand(call, a, nr, gr, shown_root, rows, ts, tid, root=shown_root is None)
            rec.source_rows(rows, n, 0, n)
        return call

    def _hand(self, call: _Call, node: TorchNode, slot: int, grad: Any, producer: TorchNode | None,
              rows: list[tuple], ts: int, tid: int, root: bool = False) -> int:
        """A gradient reaches node's InputBuffer: the rows of the derived decrement, add, and a
        push when ready, appended to ``rows`` (a gradient_in row for the three, the common
        case); the number of events they stand for."""
        gt = call.gt
        task_id = gt.id
        nid = node._id
        if producer is not None:
            pid = producer._id
            deps = gt.dependencies
            left = deps.get(node, 1) - 1
            deps[node] = left
            dec: tuple | None = ("dependency_decrement", ts, tid, task_id, nid, pid, left)
        else:
            pid = dec = None
            left = 0
        info = None
        if gt.exec_info:
            info = gt.exec_info.get(node)
            if not root and (info is None or not info.should_execute()):
                if dec is None:  # torch skips the buffer of a node that will not run
                    return 0
                rows.append(dec)
                return 1
        filled = call.filled.get(node, 0)  # a bit per InputBuffer slot: an int, nothing for the GC
        bit = 1 << slot
        if grad is None:
            mode = "undefined"
            shape = dtype = device = stats = values = None
        else:
            mode = "accumulate" if filled & bit else "set"
            filled |= bit
            call.filled[node] = filled
            shape, dtype, device, stats, values = fields(grad, self.values)
            if type(node) is TorchLeafNode:
                # a leaf's AccumulateGrad given one gradient sets .grad to those values: its
                # statistics are these, and need no second pass over a weight-sized tensor
                lone = mode == "set" and node not in call.single and grad.layout == torch.strided \
                    and stats is not None
                call.single[node] = (Summary(shape, dtype, device, stats, values), _ptr(grad)) if lone else None
        if type(node) is TorchLeafNode and grad is None:
            call.single[node] = None
        if left:
            n = 0
            if dec is not None:
                rows.append(dec)
                n = 1
            rows.append(("buffer_add", ts, tid, task_id, nid, slot, mode, pid, shape, dtype, device, stats, values))
            if mode != "undefined" and not filled & (filled - 1) and node not in call.parked:
                call.parked.add(node)
                rows.append(("not_ready_park", ts, tid, task_id, nid, left))
                return n + 2
            return n + 1
        # torch's ready_queue(cpu_queue, buffer.device()): a buffer holding a device's gradient
        # goes to that device's worker; any other to the task's own CPU queue
        dev = "cpu" if grad is None or grad.is_cpu else str(grad.device)
        q = gt.cpu_ready_queue if dev == "cpu" else self._device_queue(dev)
        call.queued[node] = q
        prio = (ev.PRIORITY_NODE, gt.reentrant_depth, node.sequence_nr)
        items = q.items
        items.append((prio, task_id, node))
        if dec is not None and node not in call.parked:  # the common case: one row for three events
            rows.append(("gradient_in", ts, tid, task_id, nid, pid, left, slot, mode, shape, dtype, device, stats,
                         values, q.id, q.device, prio, len(items)))
            n = 3
        else:
            n = 2
            if dec is not None:
                rows.append(dec)
                n = 3
            rows.append(("buffer_add", ts, tid, task_id, nid, slot, mode, pid, shape, dtype, device, stats, values))
            if node in call.parked:
                call.parked.discard(node)
                rows.append(("not_ready_take", ts, tid, task_id, nid))
                n += 1
            rows.append(("queue_push", ts, tid, q.id, q.device, task_id, nid, "node", prio, len(items)))
        if info is not None and not info.needed:
            # captured only: popped, its input captured, not run
            call.queued.pop(node, None)
            size = self._unqueue(q, node, task_id)
            rows.append(("queue_pop", ts, tid, q.id, q.device, task_id, nid, "node", prio, size))
            n += 1
        return n

    @staticmethod
    def _unqueue(q: TorchQueue, node: TorchNode, task_id: int) -> int:
        """Take node off q's simulated items (torch pops what was pushed last, mostly: searched
        from the end); the queue's size after."""
        items = q.items
        for i in range(len(items) - 1, -1, -1):
            x = items[i]
            if x[2] is node and x[1] == task_id:
                del items[i]
                break
        return len(items)

    def _hook_seen(self, fn: Any, kind: str, target: Any, args: tuple) -> None:
        """A user hook is about to run (gradviz.torchrec.hooks): its hook event, on the node
        it belongs to in this thread's call."""
        try:
            stack = getattr(self._tls, "calls", None)
            if not stack or self._closed:
                return
            call = stack[-1]
            with self._lock:
                if kind == "node":  # a Node hook: post hooks get (grad_inputs, grad_outputs)
                    kind = "post" if len(args) == 2 else "pre"
                node: TorchNode | None
                if target is None or target[0] == "module":
                    # a Node's own hook (pre hooks run before torch's node starts), or one from
                    # inside the BackwardHook node torch put in: the node running, or about to
                    node = call.running[-1][0] if (kind == "post" or target is not None) and call.running \
                        else self._next(call)
                    if node is not None and not _observed(call, node) and \
                            not (call.running and call.running[-1][0] is node):
                        self._start(call, node, stack, True)  # no pre-hook of ours: its start, derived
                        call.running.append((node, None))
                elif target[0] == "leaf":
                    t = target[1]()
                    node = None if t is None else call.leaf_of.get(id(t))
                else:
                    if call.by_key is None:  # made at the first hook of a tensor that is not a leaf
                        call.by_key = {(a.sequence_nr, a._name): a for a in call.nodes.values()
                                       if type(a) is not TorchLeafNode}
                    node = call.by_key.get(target[1])
                if node is not None:
                    self._rec.hook(call.gt, node, kind, fn)
                    call.last_ts = self._rec.now()  # a node's derived start comes after it
        except Exception:  # noqa: BLE001 - the recorder's fault never becomes the user's
            pass

    def _next(self, call: _Call) -> TorchNode | None:
        """The node torch pops next for this call: the highest priority of its queued nodes."""
        tid = call.gt.id
        best = max((x for x in call.gt.cpu_ready_queue.items if x[1] == tid), key=_prio, default=None)
        return None if best is None else best[2]

    def _mine(self, call: _Call, fn: Any) -> bool:
        """Whether this hook's call is the one running ``fn`` here: the innermost call of the
        thread that began it; on a thread that began none (torch's device worker), the one
        running call that hooks the node."""
        s = getattr(self._tls, "calls", None)
        if s:
            return s[-1] is call
        return [c for c in self._running if id(fn) in c.nodes] == [call]

    def _pre(self, call: _Call, node: TorchNode | None) -> Any:
        return functools.partial(self._on_pre, call, node)

    def _on_pre(self, call: _Call, node: TorchNode | None, grad_outputs: Any) -> None:
        try:
            if node is None:  # the call's shared hook: the node torch's engine is evaluating
                node = call.nodes.get(id(_current_node()))
                if node is None:
                    return None
            if self._closed:
                return None
            calls = getattr(self._tls, "calls", None)
            if calls:  # _mine's case of a thread that began calls, without the call
                if calls[-1] is not call:
                    return None
            elif not self._mine(call, node.fn):
                return None
            gt = call.gt
            if gt.exec_info:
                info = gt.exec_info.get(node)
                if info is not None and not info.needed:
                    return None  # a leaf's tensor hook on a gradient grad() captures: the node never runs
            with self._lock:
                self._start(call, node, calls, False)
                before = None
                if type(node) is TorchLeafNode:
                    g = node.leaf.grad
                    if g is not None:
                        before = summary(g)
                call.running.append((node, before))
        except Exception:  # noqa: BLE001 - the recorder's fault never becomes the user's
            pass
        return None

    def _start(self, call: _Call, node: TorchNode, calls: Any, derived: bool) -> None:
        """node starts (under the lock): queue_pop (derived: torch's engine shows no queue) and
        node_begin (``derived``: no pre-hook of ours saw it), in one row. A custom Function's
        backward (user code) runs next: what came before goes to the OS."""
        rec = self._rec
        rec.source_rows([self._pop_row(call, node, calls, rec.now(), self._tid("caller"))], 2, 0,
                        2 if derived else 1, flush=not node._defer_safe)

    def _pop_row(self, call: _Call, node: TorchNode, calls: Any, ts: int, tid: int) -> tuple:
        """_start's row (a node_pop: queue_pop and node_begin at ``ts``), node taken off its queue."""
        rec = self._rec
        gt = call.gt
        if not calls:
            # a thread that began no call and runs its nodes: torch's worker for a device
            rec.thread_start("device_worker", node.device)
        q = call.queued.pop(node, gt.cpu_ready_queue)
        depth = gt.reentrant_depth
        task_id = gt.id
        size = self._unqueue(q, node, task_id)
        call.ran.append(node)
        return ("node_pop", ts, tid, q.id, q.device, task_id, node._id, (ev.PRIORITY_NODE, depth, node.sequence_nr),
                size, depth)

    def _post(self, call: _Call, node: TorchNode | None) -> Any:
        return functools.partial(self._on_post, call, node)

    def _on_post(self, call: _Call, node: TorchNode | None, grad_inputs: Any, grad_outputs: Any) -> None:
        try:
            if node is None:
                node = call.nodes.get(id(_current_node()))
                if node is None:
                    return None
            if self._closed:
                return None
            calls = getattr(self._tls, "calls", None)
            if calls:
                if calls[-1] is not call:
                    return None
            elif not self._mine(call, node.fn):
                return None
            with self._lock:
                running = call.running
                if running and running[-1][0] is node or type(node) is not TorchNode or not node._defer_safe \
                        or node in call.first:  # its start seen (_observed)
                    self._after(call, node, grad_inputs, None)
                else:  # no pre-hook of ours: its start, derived (as the last node ended), in the rows of its end
                    rec = self._rec
                    tid = rec._local.tid or rec._tid()
                    self._after(call, node, grad_inputs, self._pop_row(call, node, calls, call.last_ts, tid))
        except Exception:  # noqa: BLE001 - the recorder's fault never becomes the user's
            pass
        return None

    def _after(self, call: _Call, node: TorchNode, grad_inputs: Any, head: tuple | None) -> None:
        """node ended: its rows (``head``: its derived start's row first, if it had no pre-hook)."""
        rec = self._rec
        gt = call.gt
        if head is not None:
            before = None
        else:
            _, before = call.running.pop() if call.running else (node, None)
        if type(node) is TorchLeafNode and gt.accumulate_grad:
            after = node.leaf.grad
            one = call.single.get(node) if before is None and after is not None else None
            # .grad is the very tensor handed on (torch steals a lone gradient): same values
            if one is not None and after.layout == torch.strided and _ptr(after) == one[1]:
                s = one[0]
            else:
                s = summary(after, self.values)
            if s is None:
                s = Summary((), "float32", "cpu", _ZERO)
            elif s.stats is None:
                s = Summary(s.shape, s.dtype, s.device, _ZERO, s.values)
            rec.accumulate_grad(gt, node, node.variable, before, s, "set" if before is None else "accumulate")
        call.last_ts = ts = _now() - rec._t0
        tid = rec._local.tid or rec._tid()
        nid = node._id
        rows: list[tuple] = [("node_end", ts, tid, gt.id, nid, "ok")] if head is None \
            else [head, ("node_end", ts, tid, gt.id, nid, "ok")]
        n = m = 1 if head is None else 3  # events; head's two and those after node_end (from m) are derived
        if not gt.keep_graph:
            n_saved = len(node.saved_shapes())
            if n_saved:
                rows.append(("saved_release", ts, tid, nid, n_saved))
                n += 1
        hand = self._hand
        for (f, nr), gi in zip(node.next_edges, grad_inputs):
            if f is not None:
                n += hand(call, f, nr, gi, node, rows, ts, tid)
        rec.source_rows(rows, n, m, n, 0 if head is None else 2)

    def _end(self, call: _Call, error: BaseException | None, result: Any) -> None:
        for h in call.handles:
            if type(h) is OrderedDict:  # one of torch's hook dicts, holding our hook (HookPatches)
                h.pop(call.own[0], None)
                h.pop(call.own[1], None)
            else:
                h.remove()
        call.handles.clear()
        self._hooks.own.difference_update(call.own)
        stack = self._stack()
        if stack and stack[-1] is call:
            stack.pop()
        with self._lock:
            rec = self._rec
            gt = call.gt
            try:
                if self._closed:
                    return
                n0 = rec.count
                if call.captured and error is None and result is not None:
                    res = result if isinstance(result, (tuple, list)) else (result,)
                    for a, nr, i in call.captured:
                        gi = res[i] if i < len(res) else None
                        rec.captured_grad(gt, a, nr, i, summary(gi, self.values))
                rec.mark_derived(n0)
                queued = [x for q in {gt.cpu_ready_queue, *call.queued.values()} for x in q.items if x[1] == gt.id]
                # The engine ran to its end and the call raised afterwards (grad()'s allow_unused
                # check, in run_backward once execute returned): the task ended ok, then the call
                # failed, as gradviz's engine books it (Probe.call_error).
                after = error is not None and call.ran and not call.running and not queued
                if error is not None and not after:
                    self._error(call, error)
                n0 = rec.count
                for q in self._queues.values():  # what torch never ran: popped and dropped, as its
                    mine = sorted((x for x in q.items if x[1] == gt.id), key=_prio, reverse=True)  # engine does
                    for x in mine:
                        q.items.remove(x)
                        rec.queue_pop(q, NodeTask(x[2], gt.reentrant_depth, gt.id), len(q.items))
                rec.mark_derived(n0)
                rec.task_end(gt, error if error is not None and not after else None)
                if after:
                    rec.call_error(error)
                if not stack:
                    rec.flush_derived()
            finally:
                if call in self._running:
                    self._running.remove(call)
                self._release(call)

    def _release(self, call: _Call) -> None:
        """What torch freed, the source forgets: a node that ran without retain_graph cannot
        run again, so its id goes (a retained graph's ids stay, keyed by line_key)."""
        gone = []
        for a in call.nodes.values():
            if type(a) is TorchLeafNode:
                a.leaf = None  # type: ignore[assignment]
            elif a.fn is not None:
                if call.gt.keep_graph:
                    self._kept[_key(a)] = a._id
                else:
                    if self._kept:
                        self._kept.pop(_key(a), None)
                    gone.append(a._id)
            a.fn = None
        if self._dead:
            gone += self._dead
            self._dead.clear()  # an id appended between these two lines stays known: one int, harmless
        if gone and self._rec is not None and not self._closed:
            self._rec.forget(gone)
        call.nodes.clear()
        call.filled.clear()
        call.single.clear()
        call.queued.clear()
        call.running.clear()

    def _error(self, call: _Call, error: BaseException) -> None:
        rec = self._rec
        msg = str(error)
        node = None
        if call.running:  # raised inside a node: its pre-hook ran, its post-hook did not
            node = call.running.pop()[0]
            call.running.clear()
            n0 = rec.count
            rec.node_end(call.gt, node, False)
            rec.mark_derived(n0)
        elif msg.startswith("Function '") and "nan values" in msg:  # anomaly mode, checked after the node ran
            name = msg.split("'")[1]
            node = next((n for n in reversed(call.ran) if n.name() == name), None)
        elif call.ran and isinstance(error, Exception):
            # Nodes ran, and the next raised before its post-hook, with no pre-hook of ours
            # (_observed): the node torch popped, the highest priority of the task's queue. Its
            # start and failed end, derived.
            node = self._next(call)
            if node is not None:
                n0 = rec.count
                self._start(call, node, True, True)
                rec.node_end(call.gt, node, False)
                rec.mark_derived(n0)
        if not isinstance(error, Exception):
            return  # an interrupt or exit: the run's status, not an error of a node (issue 35 item 9)
        forward = None
        if node is not None:
            forward = (lines.anomaly_traceback(node.fn) if node.fn is not None else None) or node.source
            if msg.startswith("Function '") and "nan values" in msg:
                rec.anomaly(call.gt, node, msg, forward)
        rec.error(call.gt, node, error, forward)


guard(TorchSource._on_pre, TorchSource._on_post, TorchSource._hook_seen, TorchSource._begin, TorchSource._end)


class _E(tuple):
    """An edge with the attributes the probe's task_begin reads."""

    __slots__ = ()

    def __new__(cls, function: Any, input_nr: int) -> _E:
        return tuple.__new__(cls, (function, input_nr))

    @property
    def function(self) -> Any:
        return self[0]

    @property
    def input_nr(self) -> int:
        return self[1]


class _Leaf:
    """The edge of a leaf tensor, until its AccumulateGrad is found in the walked graph."""


_LEAF = _Leaf()


def _edge(t: Any) -> tuple[Any, Any]:
    """The gradient edge of a tensor, without get_gradient_edge: that takes a sequence number
    from the thread's counter (it builds a node), which would shift every later node's."""
    if isinstance(t, torch.autograd.graph.GradientEdge):
        return t.node, t.output_nr
    if not t.requires_grad:
        return None, 0
    if t.grad_fn is not None:
        return t.grad_fn, t.output_nr
    return _LEAF, t


_HERE = os.path.dirname(os.path.abspath(__file__))


def _trim(e: BaseException) -> None:
    """Leave the recorder's frames out of e's traceback: the user sees torch's and their own,
    as without recording (the caller re-raises with a bare ``raise``, which adds none)."""
    kept = []
    tb = e.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_HERE):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    e.__traceback__ = kept[0] if kept else None


def _observed(call: _Call, node: TorchNode) -> bool:
    """Whether node has a pre-hook of ours (TorchSource._begin): a leaf's AccumulateGrad (its
    .grad before), a custom Function's node (user code runs in it: what came before goes to the
    OS first), and the first node to run (it tells an error inside the engine from one before it)."""
    return type(node) is not TorchNode or not node._defer_safe or node in call.first


_topo = operator.attrgetter("topological_nr")


def _prio(x: tuple) -> tuple[int, int, int]:
    return x[0]


def _key(a: TorchNode) -> tuple[int, int, str]:
    return threading.get_ident(), a.sequence_nr, a.fn.name()


def _ptr(t: Any) -> int | None:
    try:
        return t.data_ptr()
    except Exception:  # noqa: BLE001 - no storage (a torch.func wrapper): nothing to compare
        return None


class TorchRecorder(Recorder):
    """The one Recorder, fed by real torch: ``gradviz.trace(path, engine="torch")`` or
    ``gradviz.record(engine="torch")``."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, values: bool = False):
        super().__init__(path, values=values, source=TorchSource(values))


def trace(path: str | os.PathLike[str], *, values: bool = False) -> TorchRecorder:
    """Record torch's engine to a file: ``with gradviz.trace(path, engine="torch"): ...``."""
    return TorchRecorder(path, values=values)


def record(*, values: bool = False) -> TorchRecorder:
    """Record torch's engine in memory; ``rec.trace`` when done."""
    return TorchRecorder(None, values=values)


