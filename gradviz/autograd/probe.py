"""The probe seam: the engine and graph construction report each step to a probe.

The engine holds at most one probe (``Engine.probe``), ``None`` when nothing records, so an
unrecorded run pays one attribute check per step and nothing else. The recorder
(``gradviz.trace.recorder``) subclasses ``Probe`` and turns these calls into events; the engine
never builds events itself and knows nothing of files.

Calls come from every engine thread at once: an implementation must be thread-safe.
Arguments are live engine objects, valid only during the call:

- ``node``: a ``gradviz.autograd.graph.Node`` (``_id``, ``name()``, ``sequence_nr``,
  ``topological_nr``, ``num_inputs``, ``next_edges`` ((function, input_nr) pairs, plain tuples or
  ``Edge``s; function None for an invalid edge), ``device`` (str), ``saved_shapes()``, ``source`` (str | None),
  ``columns`` (the op's columns on that line, or None); an ``AccumulateGrad`` also has ``variable``, the leaf tensor).
- ``tensor``: a ``gradviz.Tensor`` (``_id``, ``shape``, ``dtype``, ``device``, ``name``, ``_data``).
- ``task``: a ``GraphTask`` (``id``, ``keep_graph``, ``create_graph``, ``accumulate_grad``,
  ``reentrant_depth``, ``owner`` (thread ident), ``cpu_ready_queue``, ``dependencies``
  (dict Node -> int), ``exec_info`` (dict Node -> ExecInfo(needed, captures)), ``outputs``).
- ``queue``: a ``ReadyQueue`` (``id``, ``device``, ``name``, ``owner`` (thread ident or None)).
- ``node_task``: a ``NodeTask`` (``fn`` (Node or None), ``is_shutdown``, ``reentrant_depth``,
  ``graph_task`` (GraphTask or None), ``key()`` -> priority ``(cls, depth, sequence_nr)``).
"""

from __future__ import annotations

from typing import Any


class Probe:
    """Does nothing at every step. Subclass and override what you need."""

    # -- threads and queues
    def thread_start(self, role: str, device: str | None) -> None:
        """The calling thread starts serving the engine (role: caller/device_worker/reentrant_pool)."""

    def thread_end(self) -> None:
        """The calling thread stops serving the engine."""

    def queue_created(self, queue: Any) -> None:
        """A ReadyQueue was made (a thread's local CPU queue or a device queue)."""

    # -- forward graph
    def tensor_created(self, tensor: Any) -> None:
        """A leaf that requires grad came into being (or was marked requires_grad)."""

    def node_created(self, node: Any) -> None:
        """A backward node was made; its next_edges are final."""

    # -- graph tasks
    def task_begin(self, task: Any, roots: list[Any], graph_root: Any, outputs: list[Any]) -> None:
        """Engine.execute made a GraphTask. roots/outputs are Edges; graph_root a Node or None."""

    def dependencies(self, task: Any) -> None:
        """task.dependencies has been computed."""

    def exec_info(self, task: Any) -> None:
        """task.exec_info has been computed (only called when it is not empty)."""

    def task_end(self, task: Any, error: BaseException | None) -> None:
        """The task finished, successfully or not."""

    # -- scheduling
    def dependency_decrement(self, task: Any, node: Any, by: Any, remaining: int) -> None:
        """node's dependency count went down to `remaining` because `by` ran."""

    def queue_push(self, queue: Any, node_task: Any, size: int) -> None:
        """node_task was pushed; `size` is the queue length after the push."""

    def queue_pop(self, queue: Any, node_task: Any, size: int) -> None:
        """node_task was popped; `size` is the queue length after the pop."""

    def buffer_add(self, task: Any, node: Any, slot: int, grad: Any, mode: str, producer: Any) -> None:
        """A gradient reached node's InputBuffer slot. mode: set / accumulate / undefined."""

    def not_ready_park(self, task: Any, node: Any, remaining: int) -> None:
        """node's buffer was put in not_ready, waiting for `remaining` more dependencies."""

    def not_ready_take(self, task: Any, node: Any) -> None:
        """node's buffer left not_ready: every dependency arrived."""

    def pool_push(self, task: Any, depth: int) -> None:
        """Reentrant depth limit reached: task handed to the reentrant thread pool."""

    def pool_take(self, task: Any) -> None:
        """A pool thread took the task."""

    # -- a node's steps, several at a time (the default makes the single calls above, in order,
    # so a probe that overrides only those hears all)
    def gradient_in(self, task: Any, node: Any, by: Any, slot: int, grad: Any, mode: str, remaining: int,
                    not_ready: str | None, queue: Any, size: int) -> None:
        """`by` handed node a gradient: dependency_decrement(remaining), buffer_add(slot, grad,
        mode, by), then not_ready_park(remaining) if not_ready is "park", not_ready_take if it is
        "take", then queue_push of node's NodeTask (of task) to `queue` with `size` if queue is
        not None. The engine calls it with a queue from inside that queue's lock, as it pushes
        (ReadyQueue.push_ready), so `size` is the queue's own; other pushes come as queue_push."""
        self.dependency_decrement(task, node, by, remaining)
        self.buffer_add(task, node, slot, grad, mode, by)
        if not_ready == "park":
            self.not_ready_park(task, node, remaining)
        elif not_ready == "take":
            self.not_ready_take(task, node)
        if queue is not None:
            self.queue_push(queue, _node_task(task, node), size)

    # -- running nodes
    def node_begin(self, task: Any, node: Any, depth: int) -> None:
        """node starts running on the calling thread at reentrant depth `depth`."""

    def node_end(self, task: Any, node: Any, ok: bool) -> None:
        """node finished running (ok False if it raised)."""

    def hook(self, task: Any, node: Any, kind: str, fn: Any) -> None:
        """A hook is about to be called. kind: tensor_pre/retains_grad/pre/post/post_accumulate."""

    def accumulate_grad(self, task: Any, node: Any, tensor: Any, before: Any, after: Any, mode: str) -> None:
        """AccumulateGrad updated tensor.grad (before: old grad or None; mode: set/accumulate/replace)."""

    def captured_grad(self, task: Any, node: Any, input_nr: int, index: int, grad: Any) -> None:
        """A gradient for grad()'s output `index` was captured at node's input `input_nr`."""

    def saved_release(self, node: Any, count: int) -> None:
        """node released `count` saved variables."""

    def callback(self, task: Any, fn: Any) -> None:
        """A final callback is about to run."""

    # -- failures
    def error(self, task: Any, node: Any, exc: BaseException, forward: str | None) -> None:
        """An exception was raised while running node (node may be None)."""

    def anomaly(self, task: Any, node: Any, message: str, forward: str | None) -> None:
        """Anomaly mode found NaN in node's output."""

    # -- the forward side (gradviz why); ``source`` is the user's "file:line"
    def forward_op(self, node: Any, inputs: tuple, outputs: list) -> None:
        """An op made ``node`` for ``outputs`` from ``inputs`` (node.source is the user's line)."""

    def version_bump(self, tensor: Any, op: str, source: str | None,
                     columns: tuple[int, int] | None = None) -> None:
        """``tensor`` was written in place by ``op``; its version counter went up (``columns``:
        the call's on source's line)."""

    def grad_mode(self, mode: str, enter: bool, enabled: bool, source: str | None) -> None:
        """The user's code entered or left a grad-mode block; ``enabled``: grad mode now."""

    def grad_reset(self, tensor: Any, how: str, source: str | None) -> None:
        """``tensor.grad`` was set back to None ("none") or zeroed ("zero")."""

    def non_leaf_grad_read(self, tensor: Any, source: str | None) -> None:
        """The program read ``tensor.grad`` of a non-leaf that does not retain its gradient (None)."""

    def detach(self, op: str, tensor: Any, output: Any, source: str | None) -> None:
        """``op`` took ``tensor``'s value out of autograd; ``output`` the new tensor or None."""

    def backward_call(self, api: str, tensors: tuple, inputs: tuple, retain_graph: bool,
                      source: str | None) -> None:
        """backward()/grad() was called on ``tensors`` (``inputs``: inputs=, or empty)."""

    def call_error(self, exc: BaseException) -> None:
        """The backward/grad call raised after the task this thread ran last had ended (torch's
        run_backward checks the engine's results once execute returns: allow_unused)."""


def _node_task(task: Any, node: Any) -> Any:
    """A NodeTask like the one the engine pushed for node (gradient_in's default's queue_push)."""
    from gradviz.autograd.ready_queue import NodeTask

    return NodeTask(task, node, [])
