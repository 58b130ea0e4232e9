"""The engine: runs a backward graph the way torch's C++ engine (engine.cpp) does.

- ``Engine.execute`` makes a GraphTask, counts each node's dependencies, marks which nodes must
  run (exec_info, for ``grad()`` and ``inputs=``), and pushes the root.
- ``thread_main`` pops NodeTasks and runs them with ``evaluate_function`` until its task is done.
  CPU work runs on the calling thread, from the task's own CPU queue; each non-CPU device
  (``virtual:N``, ``cuda:N``) has one worker thread and one ready queue (gradviz.autograd.threads);
  ``InputBuffer.device()`` picks where a ready node goes. Every node goes through a ReadyQueue.
- A node's gradients gather in an InputBuffer; until all dependencies have arrived the buffer
  waits in the task's ``not_ready`` map.
- Backward called from inside a backward (reentrant) runs nested on the same thread up to
  ``max_recursion_depth`` (60, as torch; ``set_max_recursion_depth``), then moves to a pool
  thread that serves the owner's ready queue while the owner waits.

The probe (``Engine.probe``) hears every step; ``None`` when nothing records, so an unrecorded
run pays one check per step. docs/engine.md maps torch's functions to these.
"""

from __future__ import annotations

import atexit
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz.autograd import _state, forward_events, graph
from gradviz.autograd import ready_queue as _ready_queue
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import anomaly
from gradviz.autograd.graph import Edge, GraphRoot, Node
from gradviz.autograd.graph_task import ExecInfo, GraphTask
from gradviz.autograd.hook_checks import _checked_hook_result, _checked_hook_results
from gradviz.autograd.input_buffer import CPU_DEVICE, InputBuffer
from gradviz.autograd.probe import Probe
from gradviz.autograd.ready_queue import NodeTask, ReadyQueue
from gradviz.autograd.threads import THREAD_STACK_SIZE, DeviceThreads, ThreadPoolShared
from gradviz.device import CPU as _CPU

# The old single-module import paths (tests and tools import these from here).
__all__ = [
    "CPU_DEVICE", "MAX_DEPTH", "THREAD_STACK_SIZE", "Engine", "ExecInfo", "GraphTask", "InputBuffer", "NodeTask",
    "ReadyQueue", "ThreadPoolShared", "compute_dependencies", "get_default_engine", "get_max_recursion_depth",
    "set_max_recursion_depth", "validate_outputs",
]

# torch: max_recursion_depth_ = MAX_DEPTH (60) before a reentrant task moves to the pool.
MAX_DEPTH = 60
# Python frames a reentrant level may need on top of the caller's before its thread's recursion
# limit: below that, the task goes to a pool thread (a fresh stack) whatever its depth.
_FRAMES_PER_LEVEL = 40


class Engine(DeviceThreads):
    """Runs backward graphs. One default instance per process: ``get_default_engine()``."""

    def __init__(self, max_recursion_depth: int = MAX_DEPTH) -> None:
        super().__init__()
        self.probe: Probe | None = None
        self._max_recursion_depth = MAX_DEPTH
        self.max_recursion_depth = max_recursion_depth

    @property
    def max_recursion_depth(self) -> int:
        """Reentrant backward calls nested on one thread before the next goes to a pool thread."""
        return self._max_recursion_depth

    @max_recursion_depth.setter
    def max_recursion_depth(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"max_recursion_depth must be a non-negative int, got {value!r}")
        self._max_recursion_depth = value

    # -- the main entry point
    def execute(self, roots: list[Edge], inputs: list[Any], keep_graph: bool, create_graph: bool,
                accumulate_grad: bool, outputs: list[Edge] | None = None) -> list[Any]:
        outputs = outputs or []
        validate_outputs(roots, inputs, _message_as_is)
        tls = _state.tls
        local_queue = tls.local_ready_queue
        if local_queue is None:
            local_queue = self._init_local_ready_queue()
        not_reentrant = tls.worker_device is _state.NO_DEVICE
        task = GraphTask(
            keep_graph, create_graph, accumulate_grad,
            0 if not_reentrant else tls.total_depth + 1, local_queue,
        )
        task.outputs = outputs
        # One root: it is the graph root itself (torch's skip_dummy_node).
        skip_dummy = len(roots) == 1
        graph_root = roots[0][0] if skip_dummy else GraphRoot(roots, inputs)
        task.graph_root = graph_root  # for graph_hooks.will_engine_execute_node
        probe = self.probe
        if probe is not None:
            if not skip_dummy:
                probe.node_created(graph_root)
            probe.task_begin(task, roots, None if skip_dummy else graph_root, outputs)
        min_topo_nr = compute_min_topological_nr(outputs) if outputs else 0
        compute_dependencies(graph_root, task, min_topo_nr)
        if probe is not None:
            probe.dependencies(task)
        if outputs:
            task.init_to_execute(graph_root, outputs, accumulate_grad, min_topo_nr)
            if probe is not None:
                probe.exec_info(task)
        if skip_dummy:
            buf = InputBuffer(len(graph_root.input_metadata))
            mode = buf.add(roots[0][1], inputs[0])
            if probe is not None:
                probe.buffer_add(task, graph_root, roots[0][1], inputs[0], mode, None)
        else:
            buf = InputBuffer(0)
        try:
            if self.execute_with_graph_task(task, graph_root, buf):
                # Reentrant, nested on this thread: execute_with_graph_task's thread_main, run
                # from this frame (one Python frame less for each nested level).
                tls.total_depth += 1
                tls.current_depth += 1
                try:
                    self.thread_main(task)
                finally:
                    tls.current_depth -= 1
                    tls.total_depth -= 1
            future = task.future
            try:
                return future.wait()
            finally:
                if task.pool_done is not None:
                    self._wait_for_pool_thread(task)
        except BaseException as exc:
            if exc is not task.future.error:
                # Interrupted while waiting (a KeyboardInterrupt in pop or in the wait on a
                # pool thread's work): stop the task's remaining work wherever it is queued.
                task.set_exception(exc, None)
                if task.pool_done is not None:
                    self._wait_for_pool_thread(task)
            raise
        finally:
            probe = self.probe
            if probe is not None:
                probe.task_end(task, task.future.error)

    def execute_with_graph_task(self, task: GraphTask, graph_root: Node, buf: InputBuffer) -> bool:
        """Queue the root and run the task, as torch's; returns True when the task is reentrant
        and must nest on this thread: the caller (execute) then runs thread_main, torch's nested
        call, from its own frame."""
        tls = _state.tls
        queue = self.ready_queue(task.cpu_ready_queue, buf.device())
        if tls.worker_device is _state.NO_DEVICE:
            # A call from user code: this thread drives CPU work until the task completes.
            tls.worker_device = task.owner_device = CPU_DEVICE
            try:
                queue.push(NodeTask(task, graph_root, buf.buffer))
                self.thread_main(task)
            finally:
                tls.worker_device = _state.NO_DEVICE
            return False
        # Reentrant: called from inside a node running on this thread (worker_device says which
        # queue this thread serves). As torch: nest while current_depth is below the limit, else
        # hand the task to a pool thread and block on its future in execute(). Python's own
        # recursion limit is a second bound on this thread's stack: a level that might not fit
        # under it goes to the pool too (torch's C++ frames have no such limit).
        task.owner_device = tls.worker_device
        queue.push(NodeTask(task, graph_root, buf.buffer))
        if tls.current_depth >= self.max_recursion_depth or _stack_room() < _FRAMES_PER_LEVEL:
            self.add_thread_pool_task(task)
            return False
        return True

    # -- the worker loop
    def thread_main(self, graph_task: GraphTask | None) -> None:
        """Pop and run NodeTasks until graph_task is done and none of its NodeTasks is left
        (device workers pass None and run until a shutdown task). The owner leaves only once the
        task's last NodeTask, the wake-up another thread sends it included, is done: nothing of
        the task stays in its queue for a later backward to find."""
        tls = _state.tls
        queue = tls.local_ready_queue
        worker_device = tls.worker_device
        # This thread's grad-mode fields: the thread-local's own dict for this thread, written
        # as setattr writes it, without threading.local's lookup of the thread's dict at every
        # access (two writes a node: ~1,100 instructions, 4% of a small node).
        grad_flags = _grad_state.__dict__
        # The caller's current graph task and grad mode: restored when a task completes (its
        # callbacks run in the caller's grad mode), after each node of a device worker (which
        # must not keep the last task alive), and on the way out.
        prev_task, prev_grad, prev_rec = tls.current_graph_task, _grad_state.grad, _grad_state.enabled
        current = None
        future = graph_task.future if graph_task is not None else None
        try:
            while future is None or not future.done or graph_task.outstanding_tasks:  # type: ignore[union-attr]
                node_task = queue.pop()
                if node_task.is_shutdown:
                    break
                ref = node_task._base
                task = ref() if ref is not None else None
                if task is None:
                    continue  # its GraphTask is gone (the caller was interrupted): skip, as torch
                fn, inputs = node_task.fn, node_task.inputs
                del node_task  # the InputBuffer's list is the gradients' only holder (stealing)
                if fn is not None and not task.has_error:
                    if task is not current:
                        tls.current_graph_task = current = task
                    # Inside the engine grad mode is what the task asked for (create_graph); set
                    # per node, since a node may leave it changed.
                    grad_flags["grad"] = grad_flags["enabled"] = task.create_graph
                    try:
                        self.evaluate_function(task, fn, inputs, task.cpu_ready_queue)
                    except BaseException as exc:  # noqa: BLE001 - every error goes to the caller
                        self.thread_on_exception(task, fn, exc)
                del fn, inputs
                # A node, a skipped node or a wake-up: its NodeTask is done. Counted after the
                # node's successors were pushed (and counted), so the count touches zero only once
                # no work remains. A thread that does not serve the owner's queue counts the
                # wake-up it sends in the same step, so the owner never sees zero before it.
                wake = False
                # The per-node locks are taken with acquire() and released in a finally, not
                # with `with`: the same locking, without looking up and calling __enter__ and
                # __exit__ (about 70 ns a lock, four locks a node).
                mutex = task.mutex
                mutex.acquire()
                try:
                    task.outstanding_tasks -= 1
                    done = not task.outstanding_tasks
                    if done and worker_device != task.owner_device:
                        task.outstanding_tasks = 1
                        wake = True
                finally:
                    mutex.release()
                if done or graph_task is None:
                    tls.current_graph_task = prev_task
                    grad_flags["grad"], grad_flags["enabled"] = prev_grad, prev_rec
                    current = None
                if done:
                    task.mark_as_completed_and_run_post_processing()
                    if wake:
                        # The owner may be asleep in pop() on its own queue: wake it.
                        owner_queue = self.ready_queue(task.cpu_ready_queue, task.owner_device or CPU_DEVICE)
                        owner_queue.push(NodeTask(task, None, []), increment_outstanding=False)
                del task
        finally:
            tls.current_graph_task = prev_task
            grad_flags["grad"], grad_flags["enabled"] = prev_grad, prev_rec

    def thread_on_exception(self, task: GraphTask, fn: Node, exc: BaseException) -> None:
        probe = self.probe
        if probe is not None:
            forward = fn._metadata.get("traceback_") if fn._metadata else None
            probe.error(task, fn, exc, forward)
        task.set_exception(exc, fn)

    def evaluate_function(self, task: GraphTask, fn: Node, inputs: list, cpu_ready_queue: ReadyQueue) -> None:
        """Run fn on its gathered gradients and hand each output to the node it flows into, in
        torch's order: exec_info (pruning, captures), call_function (hooks and the node), release
        of the saved variables, anomaly's NaN check, then for each next edge the dependency
        decrement, InputBuffer.add, and a push to the ready queue of the buffer's device once
        the node has all its gradients (until then the buffer waits in not_ready)."""
        probe = self.probe
        exec_info = task.exec_info
        if exec_info:
            info = exec_info[fn]
            if not info.needed:
                # Tensor pre-hooks run exactly once: here when fn itself does not run.
                inputs = call_tensor_pre_hooks(task, fn, inputs, probe)
            if info.captures is not None:
                with task.mutex:
                    for input_nr, output_idx in info.captures:
                        task.captured_vars[output_idx] = inputs[input_nr]
                        if probe is not None:
                            probe.captured_grad(task, fn, input_nr, output_idx, inputs[input_nr])
            if not info.needed:
                return
        edges = fn.next_edges
        if fn._hooked or probe is not None:
            outputs = self.call_function(task, fn, inputs, probe)
        else:
            # call_function with nothing to call around the node (no hooks, nothing records):
            # one frame less for each reentrant level that passes through here.
            outputs = fn.apply(inputs) if exec_info else fn._apply_all(inputs)
            outputs = validate_outputs(edges, outputs, None, fn, fn._fresh_outputs)
        del inputs
        if not task.keep_graph:
            released = fn.release_variables()
            if released and probe is not None:
                probe.saved_release(fn, released)
        if anomaly.enabled and anomaly.check_nan:
            _check_nan(task, fn, outputs, probe)
        dependencies = task.dependencies
        not_ready = task.not_ready
        mutex = task.mutex
        mutex.acquire()
        try:
            i = -1
            for next_fn, input_nr in edges:
                i += 1
                if next_fn is None:
                    continue
                remaining = dependencies.get(next_fn)
                if remaining is None:
                    raise RuntimeError(f"dependency not found for {next_fn.name()}")
                output = outputs[i]
                outputs[i] = None  # the buffer holds it alone (InputBuffer.add and AccumulateGrad steal then)
                if remaining != 1:
                    dependencies[next_fn] = remaining - 1
                    buf = not_ready.get(next_fn)
                    took = None
                    if buf is None:
                        if exec_info and not ((info := exec_info.get(next_fn)) and info.should_execute()):
                            if probe is not None:  # pruned: not on a path to the requested outputs
                                probe.dependency_decrement(task, next_fn, fn, remaining - 1)
                            continue
                        buf = not_ready[next_fn] = InputBuffer(len(next_fn.input_metadata))
                        took = "park"
                    mode = buf.add(input_nr, output)
                    if probe is not None:
                        probe.gradient_in(task, next_fn, fn, input_nr, output, mode, remaining - 1, took, None, 0)
                    continue
                del dependencies[next_fn]
                buf = not_ready.pop(next_fn, None) if not_ready else None  # no call while none waits
                if buf is None:
                    if exec_info and not ((info := exec_info.get(next_fn)) and info.should_execute()):
                        if probe is not None:
                            probe.dependency_decrement(task, next_fn, fn, 0)
                        continue
                    # Ready at its first gradient: InputBuffer(n).add into an empty slot sets it,
                    # so the buffer's list is made with it, and its device is the gradient's.
                    n = len(next_fn.input_metadata)
                    if n == 1:
                        slots = [output]
                    else:
                        slots = [None] * n
                        slots[input_nr] = output
                    took = None
                    if output is None:
                        mode = "undefined"
                        queue = cpu_ready_queue
                    else:
                        mode = "set"
                        dev = output.device
                        queue = cpu_ready_queue if dev is _CPU or dev.type == "cpu" else self._device_queue(dev._str)
                else:
                    mode = buf.add(input_nr, output)
                    slots = buf.buffer
                    took = "take"
                    device = buf.device()
                    queue = cpu_ready_queue if device == CPU_DEVICE else self._device_queue(device)
                # Counted before it is visible to pop(); the probe hears the gradient with the
                # push, inside the queue's lock (ReadyQueue.push_ready).
                task.outstanding_tasks += 1
                told = (task, fn, input_nr, output, mode, took) if probe is not None else None
                output = None  # a gradient held by a local is not stolen by the node it goes to
                queue.push_ready(NodeTask(task, next_fn, slots), told)
        finally:
            mutex.release()

    def call_function(self, task: GraphTask, fn: Node, inputs: list, probe: Probe | None) -> list:
        """Hooks and the node, in torch's order: tensor pre-hooks, retains_grad hooks, pre-hooks,
        the function, output validation, post-hooks."""
        if probe is not None:
            probe.node_begin(task, fn, _state.tls.current_depth)
        ok = False
        try:
            grads = call_tensor_pre_hooks(task, fn, inputs, probe)
            if fn._pre_hooks:
                for hook in list(fn._pre_hooks.values()):
                    if probe is not None:
                        probe.hook(task, fn, "pre", hook)
                    res = hook(tuple(grads))
                    if res is not None:
                        grads = _checked_hook_results(hook, grads, res)
            # Post-hooks see the gradients the node got: it gets a copy of the list then (torch's
            # inputs_copy), else the list itself (AccumulateGrad steals only a sole holder's).
            args = list(grads) if fn._post_hooks else grads
            outputs = fn.apply(args) if task.exec_info else fn._apply_all(args)
            del args
            outputs = validate_outputs(fn.next_edges, outputs, None, fn, fn._fresh_outputs)
            if fn._post_hooks:
                for hook in list(fn._post_hooks.values()):
                    if probe is not None:
                        probe.hook(task, fn, "post", hook)
                    res = hook(tuple(outputs), tuple(grads))
                    if res is not None:
                        outputs = _checked_hook_results(hook, outputs, res)
            ok = True
            return outputs
        finally:
            if probe is not None:
                probe.node_end(task, fn, ok)

    def queue_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the current graph task finishes (only inside a backward)."""
        task = _state.tls.current_graph_task
        if task is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        with task.mutex:
            task.final_callbacks.append(callback)


def _stack_room() -> int:
    """Python frames left on this thread before its recursion limit (counted only for a
    reentrant backward: a walk of the stack)."""
    depth = 0
    frame = sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return sys.getrecursionlimit() - depth


def _check_nan(task: GraphTask, fn: Node, outputs: list, probe: Probe | None) -> None:
    """Anomaly mode's check of a node's outputs (set_detect_anomaly(True, check_nan=True))."""
    for i, out in enumerate(outputs):
        if out is not None and bool(np.isnan(out._data).any()):
            message = f"Function '{fn.name()}' returned nan values in its {i}th output."
            if probe is not None:
                probe.anomaly(task, fn, message, fn._metadata.get("traceback_") if fn._metadata else None)
            raise RuntimeError(message)


def call_tensor_pre_hooks(task: GraphTask, fn: Node, grads: list, probe: Probe | None) -> list:
    if fn._tensor_pre_hooks is None and fn._retains_grad_hooks is None:
        return grads
    grads = list(grads)
    if fn._tensor_pre_hooks:
        for slot, hooks in fn._tensor_pre_hooks.items():
            for hook in list(hooks.values()):
                if probe is not None:
                    probe.hook(task, fn, "tensor_pre", hook)
                res = hook(grads[slot])
                if res is not None:
                    grads[slot] = _checked_hook_result(hook, grads[slot], res)
    if fn._retains_grad_hooks:
        for slot, hook in fn._retains_grad_hooks.items():
            if probe is not None:
                probe.hook(task, fn, "retains_grad", hook)
            res = hook(grads[slot])
            if res is not None:
                grads[slot] = res
    return grads


def compute_dependencies(root: Node, task: GraphTask, min_topo_nr: int) -> None:
    """Count, for every node reachable from root, how many edges point at it (iterative).
    A node is in ``dependencies`` once it has been reached, so that dict is also the seen set."""
    dependencies = task.dependencies
    get = dependencies.get
    # The stack's own methods, not bound ones held in locals: compiled, a list's pop and append
    # are inline C (the interpreter specialises both calls too).
    stack = [root]
    while stack:
        fn = stack.pop()
        if min_topo_nr and fn.topological_nr < min_topo_nr:
            continue
        for edge in fn.next_edges:
            next_fn = edge[0]
            if next_fn is not None:
                n = get(next_fn)
                if n is None:
                    dependencies[next_fn] = 1
                    stack.append(next_fn)
                else:
                    dependencies[next_fn] = n + 1


def compute_min_topological_nr(outputs: list[Edge]) -> int:
    if not outputs:
        return 0
    return min(e[0].topological_nr for e in outputs if e[0] is not None)


def validate_outputs(edges: list[Edge], grads: list[Any], format_error: Callable[[str], str] | None,
                     fn: Node | None = None, fresh: bool = False) -> list[Any]:
    """Check each gradient against the metadata of the input it flows into; reduce broadcasts
    and cast dtypes as torch does. Errors name ``fn`` ("Function X returned an ...") unless
    ``format_error`` is given. Returns a new list (the given one is left as it is), or with
    ``fresh`` (a list its caller alone holds: Node._fresh_outputs) that list, fixed in place."""
    n = len(edges)
    if len(grads) != n:
        raise RuntimeError(
            _validate_error(format_error, fn, f"invalid number of gradients - expected {n}, but got {len(grads)}")
        )
    if not fresh or type(grads) is not list:
        grads = list(grads)
    i = -1
    for next_fn, input_nr in edges:
        i += 1
        grad = grads[i]
        if grad is None or next_fn is None:
            continue
        meta = next_fn.input_metadata[input_nr]
        # Raw shapes and the dtype and device objects: a gradient that fits is left as it is.
        if grad._data.shape != meta[0] or grad.dtype is not meta[1] or grad.device is not meta[2]:
            grads[i] = _fit_gradient(grad, meta, i, format_error, fn)
    return grads


def _fit_gradient(grad: Any, meta: Any, i: int, format_error: Callable[[str], str] | None, fn: Node | None) -> Any:
    """validate_outputs for gradient ``i``, which differs from its input's metadata ``meta`` in
    shape, dtype or device object: the gradient reduced, cast or moved to fit, or the error."""
    # Raw shapes: a Size is built only where they differ.
    if grad._data.shape != meta[0]:
        if _expandable_to(meta[0], grad.shape):
            from gradviz.ops.functions import sum_to

            grad = sum_to(grad, meta[0])
        else:
            raise RuntimeError(_validate_error(format_error, fn,
                f"invalid gradient at index {i} - got {list(grad.shape)} but expected shape "
                f"compatible with {list(meta[0])}"
            ))
    if grad.dtype is not meta[1]:
        grad = grad.to(meta[1])
    device = meta[2]
    if grad.device is not device and grad.device != device:
        # A 0-dim gradient moves to the input's device, as torch does: a CPU scalar may meet
        # a tensor on any device in forward, so its gradient may come back from that device.
        if grad.ndim == 0:
            grad = grad.to(device)
        else:
            raise RuntimeError(_validate_error(format_error, fn,
                f"invalid gradient at index {i} - expected device {device} but got {grad.device}"
            ))
    return grad


def _message_as_is(msg: str) -> str:
    """Engine.execute's format_error: the root gradients' errors carry no node name."""
    return msg


def _validate_error(format_error: Callable[[str], str] | None, fn: Node | None, msg: str) -> str:
    if format_error is not None:
        return format_error(msg)
    return f"Function {fn.name()} returned an {msg}" if fn is not None else msg


def _expandable_to(shape: tuple[int, ...], desired: tuple[int, ...]) -> bool:
    if len(shape) > len(desired):
        return False
    for s, d in zip(reversed(shape), reversed(desired), strict=False):
        if s != d and s != 1:
            return False
    return True


_ENGINE = Engine()
graph._ENGINE = _ENGINE
_ready_queue._ENGINE = _ENGINE
forward_events.engine = _ENGINE


def get_default_engine() -> Engine:
    return _ENGINE


class set_max_recursion_depth:  # noqa: N801 - a function-like context manager, as set_grad_enabled
    """Set how many reentrant backward calls nest on one thread before the next one moves to a
    reentrant pool thread (torch's max_recursion_depth_, 60 by default and fixed there).

    Takes effect at once on the default engine; used as a context manager it restores the
    previous value on exit::

        with set_max_recursion_depth(4):   # watch the hand-off to pool threads early
            loss.backward()

    0 sends every reentrant call to the pool. The Python recursion limit is per thread, so a
    depth much above torch's 60 can overflow it on the calling thread; the pool hand-off is what
    bounds the stack of each thread.
    """

    def __init__(self, depth: int) -> None:
        self.prev = _ENGINE.max_recursion_depth
        _ENGINE.max_recursion_depth = depth
        self.depth = depth

    def __enter__(self) -> set_max_recursion_depth:
        return self

    def __exit__(self, *exc: object) -> None:
        _ENGINE.max_recursion_depth = self.prev


def get_max_recursion_depth() -> int:
    return _ENGINE.max_recursion_depth


def _shutdown_at_exit() -> None:
    _ENGINE.shutdown(timeout=1.0)


atexit.register(_shutdown_at_exit)
