"""Hooks around the graph, as torch.autograd.graph offers them.

- ``Tensor.register_post_accumulate_grad_hook``: ``hook(leaf)`` after AccumulateGrad has updated
  the leaf's ``.grad`` (run from AccumulateGrad.apply, after the tensor pre-hooks and node
  pre-hooks, before the node's post-hooks, as torch).
- ``saved_tensors_hooks(pack, unpack)``: every tensor a node saves while the context is active is
  replaced by ``pack(tensor)``; backward gets ``unpack(packed)`` back. ``save_on_cpu`` is one.
- ``register_multi_grad_hook(tensors, fn, mode="all"|"any")``: one hook over several tensors'
  gradients per backward call.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from gradviz.autograd import _state
from gradviz.autograd import graph as _graph
from gradviz.autograd import saved_variable as _saved
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.graph import Node, RemovableHandle

# -- post-accumulate-grad hooks ------------------------------------------------------------


def register_post_accumulate_grad_hook(t: Any, hook: Callable[[Any], None]) -> RemovableHandle:
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = t._post_accumulate_grad_hooks
    if hooks is None:
        hooks = t._post_accumulate_grad_hooks = {}
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def call_post_accumulate_grad_hooks(node: Node, var: Any, probe: Any) -> None:
    from gradviz.tensor import Tensor

    for hook in list(var._post_accumulate_grad_hooks.values()):
        if probe is not None:
            probe.hook(_state.tls.current_graph_task, node, "post_accumulate", hook)
        res = hook(var)
        if res is not None:
            if isinstance(res, Tensor):
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
            raise TypeError(f"expected Variable, but hook returned '{type(res).__name__}'")


# -- saved tensors hooks -------------------------------------------------------------------


class _HookStack(threading.local):
    """The (pack, unpack) pairs active on this thread, innermost last (torch keeps them per thread)."""

    def __init__(self) -> None:
        self.stack: list[tuple[Callable, Callable]] = []
        self.disabled: str | None = None
        # Outputs saved before their op gave them a grad_fn: packed at the next save, unpack or
        # context exit, so the pack hook sees them as torch's does (with their grad_fn).
        self.pending: list[tuple[Any, Any, Callable, Callable, Any, Any]] = []


_hooks = _HookStack()


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Context in which each tensor saved for backward goes through ``pack_hook`` when saved and
    ``unpack_hook`` each time backward (or ``ctx.saved_tensors``) reads it."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:  # None, as torch's (``with ... as h`` binds None)
        if _hooks.disabled is not None:
            raise RuntimeError(_hooks.disabled)
        _hooks.stack.append((self.pack_hook, self.unpack_hook))
        _saved._saved_hooks_active += 1

    def __exit__(self, *exc: object) -> None:
        try:
            _flush_pending()  # a pack hook may raise here: the pair is popped all the same
        finally:
            _hooks.stack.pop()
            _saved._saved_hooks_active -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Saved tensors are kept on the CPU and moved back to their device when backward reads them.
    ``pin_memory`` is accepted (gradviz has no pinned memory)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Any) -> tuple[Any, Any]:
            return t.device, t.detach().to("cpu").clone()

        def unpack(packed: tuple[Any, Any]) -> Any:
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Inside it, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self.prev = _hooks.disabled
        _hooks.disabled = self.error_message

    def __exit__(self, *exc: object) -> None:
        _hooks.disabled = self.prev


class _Packed:
    """What a SavedVariable keeps when saved under hooks: the packed value, the unpack hook, and
    the saved tensor's place in the graph (so the unpacked tensor takes it back, as torch)."""

    __slots__ = ("packed", "unpack", "grad_fn", "accumulator", "requires_grad")

    def __init__(self, packed: Any, unpack: Callable, grad_fn: Any, accumulator: Any, requires_grad: bool) -> None:
        self.packed = packed
        self.unpack = unpack
        self.grad_fn = grad_fn
        self.accumulator = accumulator
        self.requires_grad = requires_grad


class _Pending:
    """A save waiting for its node to be recorded before it is packed (see pack_saved)."""

    __slots__ = ()


_PENDING = _Pending()


def _call_hook(hook: Callable, value: Any) -> Any:
    # The hooks run with no other hooks active: a tensor a pack hook saves is saved plainly.
    stack = _hooks.stack
    _hooks.stack = []
    try:
        return hook(value)
    finally:
        _hooks.stack = stack


def _flush_pending(saved: dict[str, Any] | None = None) -> None:
    """Pack the saves waiting for it. ``saved``: the dict of the node just recorded, whose
    variables are packed in torch's order (inputs sorted by name, then outputs), after any
    others still waiting."""
    pending = _hooks.pending
    if not pending:
        return
    _hooks.pending = []
    if saved is not None and len(pending) > 1:
        rank: dict[int, tuple] = {}
        for k, v in saved.items():
            if type(v) is _saved.SavedVariable:
                rank[id(v)] = (v.is_output, k, 0)
            elif type(v) is list:
                for j, s in enumerate(v):
                    if type(s) is _saved.SavedVariable:
                        rank[id(s)] = (s.is_output, k, j)
        strays = [p for p in pending if id(p[0]) not in rank]
        pending = strays + sorted((p for p in pending if id(p[0]) in rank), key=lambda p: rank[id(p[0])])
    for sv, tensor, pack, unpack, grad_fn, accumulator in pending:
        if sv.released:
            continue
        sv._packed = _Packed(_pack_checked(pack, tensor, tensor), unpack, grad_fn, accumulator,
                             bool(tensor.requires_grad))


def flush_recorded(saved: dict[str, Any]) -> None:
    """record() made a node with these saved values: pack what its op saved (see pack_saved)."""
    if _hooks.pending:
        _flush_pending(saved)


def pack_saved(sv: Any, tensor: Any, is_output: bool) -> bool:
    """Called by SavedVariable.__init__ while some thread has hooks: pack ``tensor`` with this
    thread's innermost pair. False when this thread has none (the variable keeps the tensor).

    The pack hook runs when the op records its node, not now: torch packs a node's saved
    variables in its generated order (inputs sorted by name, then outputs), and an output once it
    has its grad_fn. A save no node records is packed at the next record, unpack or context exit
    (custom Functions flush their own right after saving)."""
    stack = _hooks.stack
    if not stack or not _grad_state.grad:
        # (grad mode off: an op saving for a dual level's tangents only, no node to come)
        return False
    pack, unpack = stack[-1]
    grad_fn = accumulator = None
    if not is_output:  # its place in the graph as it is now (an in-place op may move it)
        grad_fn = tensor._grad_fn
        if grad_fn is None and tensor._requires_grad:
            accumulator = _graph.grad_accumulator(tensor)
    _hooks.pending.append((sv, tensor, pack, unpack, grad_fn, accumulator))
    sv._packed = _PENDING
    sv.tensor = None
    return True


def _pack_checked(pack: Callable, arg: Any, tensor: Any) -> Any:
    # torch packs under no_grad and refuses a pack hook that changes the saved tensor in place.
    from gradviz.autograd.grad_mode import no_grad
    from gradviz.autograd.saved_tensor import ERR_PACK_INPLACE

    version = tensor._version_counter[0]
    with no_grad():
        packed = _call_hook(pack, arg)
    if tensor._version_counter[0] != version:
        raise RuntimeError(ERR_PACK_INPLACE)
    return packed


def pack_registered(sv: Any, pack: Callable, unpack: Callable) -> None:
    """SavedTensor.register_hooks: pack one saved variable now. The hook gets a detached alias of
    a saved input, or the saved output as the variable keeps it (without grad_fn), as torch's."""
    tensor = sv.tensor
    grad_fn = accumulator = None
    if sv.is_output:
        arg = tensor
    else:
        arg = tensor.detach()
        grad_fn = tensor._grad_fn
        if grad_fn is None and tensor._requires_grad:
            accumulator = _graph.grad_accumulator(tensor)
    packed = _pack_checked(pack, arg, tensor)
    sv._packed = _Packed(packed, unpack, grad_fn, accumulator, bool(tensor.requires_grad))
    sv.tensor = None


def unpack_saved(sv: Any, saved_for: Node | None) -> Any:
    from gradviz.tensor import Tensor

    if sv._packed is _PENDING:
        _flush_pending()
    p = sv._packed
    u = _call_hook(p.unpack, p.packed)
    if not isinstance(u, Tensor):
        raise TypeError(
            f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type {type(u).__name__}"
        )
    out = type(u)._wrap(u._data, u.dtype, u.device)
    out._version_counter = u._version_counter
    if sv.is_output:
        if saved_for is not None:
            out._grad_fn = saved_for
            out._output_nr = sv.output_nr
    elif p.grad_fn is not None:
        out._grad_fn = p.grad_fn
        out._output_nr = sv.output_nr
    elif p.accumulator is not None:
        out._requires_grad = True
        out._grad_accumulator = weakref.ref(p.accumulator)
    return out


# -- multi-grad hooks ----------------------------------------------------------------------


def _node_of(t: Any) -> Node | None:
    fn = t.grad_fn
    if fn is not None:
        return fn
    if t.requires_grad:
        return _graph.grad_accumulator(t)
    return None


def will_engine_execute_node(node: Node) -> bool:
    """Whether the current backward runs ``node`` (torch's _will_engine_execute_node)."""
    task = _state.tls.current_graph_task
    if task is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    if task.exec_info:
        info = task.exec_info.get(node)
        if info is None or not info.should_execute():
            return False
        if not task.accumulate_grad and isinstance(node, _graph.AccumulateGrad):
            # A captured leaf: grad() never runs its AccumulateGrad (torch refuses to say).
            raise RuntimeError(
                "A leaf node was passed to _will_engine_execute_node but we are currently running "
                "autograd.grad(). This is currently not supported."
            )
        return True
    reach = task.__dict__.get("_reachable")
    if reach is None:
        # Every node reachable from the task's root runs when no inputs were given.
        root = task.graph_root
        reach = {root}
        stack = [root]
        while stack:
            for fn, _ in stack.pop().next_edges:
                if fn is not None and fn not in reach:
                    reach.add(fn)
                    stack.append(fn)
        task._reachable = reach
    return node in reach


class _MultiHandle:
    """Removes every per-tensor hook of one register_multi_grad_hook call."""

    def __init__(self, handles: tuple[RemovableHandle, ...]) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[[Any], None], *, mode: str = "all") -> _MultiHandle:
    """``mode="all"``: ``fn(grads)`` once per backward, after the gradient of every tensor that
    backward computes (None for the others). ``mode="any"``: ``fn(grad)`` with the first one."""
    modes = ("all", "any")
    if mode not in modes:
        raise ValueError(f"Expects mode to be one of {modes} but got {mode}")
    lock = threading.Lock()
    tensors = tuple(tensors)
    if mode == "any":
        fired: set[int] = set()

        def first(grad: Any) -> None:
            task = _state.tls.current_graph_task
            with lock:
                if task.id in fired:
                    return
                fired.add(task.id)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(first) for t in tensors))

    nodes = [_node_of(t) for t in tensors]
    # Per backward call (graph task id): gradients so far, and how many are expected.
    pending: dict[int, list] = {}

    def hook_for(i: int) -> Callable[[Any], None]:
        def hook(grad: Any) -> None:
            task = _state.tls.current_graph_task
            with lock:
                entry = pending.get(task.id)
                if entry is None:
                    expected = sum(1 for n in nodes if n is not None and will_engine_execute_node(n))
                    entry = pending[task.id] = [[None] * len(tensors), 0, expected]
                entry[0][i] = grad
                entry[1] += 1
                done = entry[1] == entry[2]
                if done:
                    del pending[task.id]
            if done:
                fn(entry[0])

        return hook

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))


# graph.py and saved_variable.py call into this module through their _hooks (they cannot import
# it: this module imports them), and torch.autograd.graph's names for this API are graph's attributes.
_graph._hooks = _saved._hooks = sys.modules[__name__]
for _name in ("saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook"):
    setattr(_graph, _name, globals()[_name])
