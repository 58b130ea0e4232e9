"""The event vocabulary: one frozen record type per step of the engine's life.

Events are the contract between the engine and everything that reads a trace (load, replay,
render, export): those layers import this module, never the engine. JSON exists only at the
edge (``gradviz.trace.codec``); here events are typed Python records.

Identifiers used across events:
- node ids, tensor ids, task ids and queue ids are small integers assigned by the engine in the
  order things are created in the process; they are never reused within a trace.
- ``tid`` is a small integer the recorder gives each thread the first time it emits an event;
  a ``thread_start`` event carrying that tid always comes before any other event of the thread.
- an edge is written ``[node, input_nr]``: the node it points to and which of that node's inputs
  (InputBuffer slots) it feeds.
- a priority key is ``[cls, reentrant_depth, sequence_nr]``: ``cls`` is 0 for a shutdown task,
  1 for an empty wake-up task, 2 for a node task. A ready queue pops the smallest ``cls`` first,
  then the highest reentrant depth, then the highest sequence_nr (torch's CompareNodeTaskTime);
  equal keys pop in the order of libstdc++'s binary heap, as torch's std::priority_queue, which
  has no tie-breaker (the recorded pops say which came first).

Bump ``FORMAT_VERSION`` on any change a reader of an older trace would notice.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, fields
from typing import Any, ClassVar

FORMAT_VERSION = 4  # 4: the engine and derived kinds (a trace recorded from real torch)
FORMAT_NAME = "gradviz-trace"

# Priority classes of a ready-queue task (first element of a priority key).
PRIORITY_SHUTDOWN = 0
PRIORITY_WAKEUP = 1
PRIORITY_NODE = 2

# AccumulateGrad's sequence_nr: UINT64_MAX, as torch, so leaves run as soon as they are ready.
MAX_SEQUENCE_NR = 2**64 - 1


@dataclass(frozen=True, slots=True)
class Stats:
    """A summary of a tensor's values: what a debugger needs, not the values themselves."""

    norm: float  # L2 norm over all elements (NaN if any element is NaN)
    min: float  # smallest finite-or-not element; NaN for an empty tensor
    max: float  # largest element; NaN for an empty tensor
    nan: int  # count of NaN elements
    inf: int  # count of +inf and -inf elements


def norm_and_bad(stats: Stats | None) -> tuple[float | None, bool]:
    """(norm, whether a NaN or Inf is in it) of a gradient's stats; (None, False) without any."""
    if stats is None:
        return None, False
    return stats.norm, stats.nan > 0 or stats.inf > 0


@dataclass(frozen=True, slots=True)
class Event:
    """Fields every event has. ``kind`` is a class-level tag, written into the file."""

    kind: ClassVar[str] = "event"
    seq: int  # global order of the event in the trace, strictly increasing, across all threads
    ts: int  # nanoseconds since the trace began (monotonic clock)
    tid: int  # recorder-assigned id of the thread that emitted the event


# --- the trace itself -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceBegin(Event):
    kind: ClassVar[str] = "trace_begin"
    format_version: int  # FORMAT_VERSION of the writer
    gradviz_version: str
    numpy_version: str
    python_version: str
    platform: str  # sys.platform and machine, e.g. "linux-x86_64"
    devices: tuple[str, ...]  # devices known when the trace began, e.g. ("cpu", "virtual:0")
    argv: tuple[str, ...]  # the recorded program's sys.argv
    pid: int  # process id of the recorded program
    values: bool  # whether small tensors' values are stored in the events (``values`` fields)
    # a rank of a distributed job (torchrun's RANK, LOCAL_RANK, WORLD_SIZE in the environment when
    # the trace began; None outside one). backend: the default process group's, when one existed
    # as the trace began; else None, and ``dist_init`` says it once the program makes the group
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


@dataclass(frozen=True, slots=True)
class TraceEnd(Event):
    kind: ClassVar[str] = "trace_end"
    status: str  # "ok", "error" (the program raised) or "interrupted" (signal / Ctrl-C)
    events: int  # number of events written before this one
    error: str | None = None  # "Type: message" of the program's exception, if any


# --- threads and queues ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThreadStart(Event):
    kind: ClassVar[str] = "thread_start"
    name: str  # Python thread name, e.g. "MainThread" or "gradviz-virtual:0"
    device: str | None  # device a worker serves ("virtual:0"); None for caller threads
    role: str  # "caller", "device_worker" or "reentrant_pool"


@dataclass(frozen=True, slots=True)
class ThreadEnd(Event):
    kind: ClassVar[str] = "thread_end"


@dataclass(frozen=True, slots=True)
class QueueCreated(Event):
    kind: ClassVar[str] = "queue_created"
    queue: int  # queue id
    device: str  # "cpu" for a thread's local CPU queue, else the device the queue serves
    owner: int | None  # tid of the thread that pops from it (None if not yet known)
    name: str  # human label, e.g. "cpu@MainThread" or "virtual:0"


# --- the forward graph ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TensorCreated(Event):
    """A leaf tensor that requires grad (the ones AccumulateGrad nodes write into)."""

    kind: ClassVar[str] = "tensor_created"
    tensor: int  # tensor id
    name: str | None  # the user's name for it, if known (Tensor.name or a variable name)
    shape: tuple[int, ...]
    dtype: str  # "float32", "float64", "int64" or "bool"
    device: str
    source: str | None  # "file:line" of the user code that created it
    # Its values when it joined a graph (None: not recorded): two runs whose leaves already differ
    # (an unseeded script) are told apart from a wrong gradient by gradviz diff.
    stats: Stats | None = None


@dataclass(frozen=True, slots=True)
class NodeCreated(Event):
    kind: ClassVar[str] = "node_created"
    node: int  # node id
    name: str  # torch's name, e.g. "MulBackward0", "AccumulateGrad", "GraphRoot"
    sequence_nr: int  # creation order on the creating thread (AccumulateGrad: MAX_SEQUENCE_NR)
    topological_nr: int  # longest path from this node to any leaf (AccumulateGrad: 0)
    num_inputs: int  # InputBuffer slots = number of forward outputs
    num_outputs: int  # next_edges, one per forward input (invalid ones included)
    device: str  # device of the node's first input metadata
    saved: tuple[tuple[int, ...], ...]  # shapes of the tensors the node saved for backward
    source: str | None  # "file:line" of the user code that created the node
    tensor: int | None = None  # AccumulateGrad only: the leaf it accumulates into
    # The op's expression on source's line (several ops on one line are told apart): 0-based
    # [start, end) columns in UTF-8 bytes, as Python's code positions; end -1: the expression goes
    # on past the line. None: not known (an older trace, or Python kept no columns).
    columns: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class EdgeCreated(Event):
    kind: ClassVar[str] = "edge_created"
    src: int  # the node whose next_edges hold the edge
    slot: int  # index in src.next_edges (which forward input of src)
    dst: int | None  # the node the edge points to; None for next_functions' (None, 0)
    input_nr: int  # which InputBuffer slot of dst it feeds


# --- graph tasks ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskBegin(Event):
    kind: ClassVar[str] = "task_begin"
    task: int  # graph task id
    roots: tuple[tuple[int, int], ...]  # root edges [node, input_nr] passed to Engine.execute
    graph_root: int | None  # the GraphRoot node made for several roots / a gradient, if any
    keep_graph: bool  # retain_graph
    create_graph: bool
    accumulate_grad: bool  # True for backward(), False for grad()
    outputs: tuple[tuple[int, int], ...]  # edges whose gradients are captured (grad(), inputs=)
    reentrant_depth: int  # 0 for a call from user code; >0 inside another backward
    owner: int  # tid of the thread that called backward
    cpu_queue: int  # queue id of the task's cpu_ready_queue


@dataclass(frozen=True, slots=True)
class TaskEnd(Event):
    kind: ClassVar[str] = "task_end"
    task: int
    status: str  # "ok" or "error"
    error: str | None = None  # "Type: message" when status is "error"


@dataclass(frozen=True, slots=True)
class Dependencies(Event):
    """Dependency counts computed before the task starts (compute_dependencies)."""

    kind: ClassVar[str] = "dependencies"
    task: int
    counts: tuple[tuple[int, int], ...]  # [node, count] for every node reachable from the roots


@dataclass(frozen=True, slots=True)
class ExecInfo(Event):
    """Which nodes the task will run (only for tasks with outputs: grad() or inputs=)."""

    kind: ClassVar[str] = "exec_info"
    task: int
    needed: tuple[int, ...]  # nodes that will execute
    captured: tuple[tuple[int, int, int], ...]  # [node, input_nr, output index] captures


@dataclass(frozen=True, slots=True)
class DependencyDecrement(Event):
    kind: ClassVar[str] = "dependency_decrement"
    task: int
    node: int  # the node whose count went down
    by: int  # the node that just ran and fed it
    remaining: int  # count after the decrement


# --- ready queues --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueuePush(Event):
    kind: ClassVar[str] = "queue_push"
    queue: int
    device: str  # the queue's device
    task: int | None  # graph task of the NodeTask (None for shutdown tasks)
    node: int | None  # node to run (None for wake-up and shutdown tasks)
    what: str  # "node", "wakeup" or "shutdown"
    priority: tuple[int, int, int]  # [cls, reentrant_depth, sequence_nr], see module doc
    size: int  # queue length after the push


@dataclass(frozen=True, slots=True)
class QueuePop(Event):
    kind: ClassVar[str] = "queue_pop"
    queue: int
    device: str
    task: int | None
    node: int | None
    what: str
    priority: tuple[int, int, int]
    size: int  # queue length after the pop


# --- InputBuffers --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BufferAdd(Event):
    kind: ClassVar[str] = "buffer_add"
    task: int
    node: int  # the node whose InputBuffer receives the gradient
    slot: int  # input_nr
    mode: str  # "set" (first gradient), "accumulate" (summed into the slot), "undefined" (None)
    producer: int | None  # the node that produced the gradient (None for the task's roots)
    shape: tuple[int, ...] | None  # None for an undefined gradient
    dtype: str | None
    device: str | None
    # None for an undefined gradient, or for one whose values cannot be read (on torch: a
    # torch.func wrapper inside jacrev/vmap/grad, a meta or fake tensor): not summarised
    stats: Stats | None
    values: Any = None  # nested lists of the gradient, only when the trace stores values


@dataclass(frozen=True, slots=True)
class NotReadyPark(Event):
    """A node got some, not all, of its gradients: its InputBuffer waits in not_ready."""

    kind: ClassVar[str] = "not_ready_park"
    task: int
    node: int
    remaining: int  # dependencies still missing


@dataclass(frozen=True, slots=True)
class NotReadyTake(Event):
    """The last dependency arrived: the parked InputBuffer leaves not_ready for a queue."""

    kind: ClassVar[str] = "not_ready_take"
    task: int
    node: int


# --- running nodes -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeBegin(Event):
    kind: ClassVar[str] = "node_begin"
    task: int
    node: int
    depth: int  # reentrant depth of the running thread (current_depth)


@dataclass(frozen=True, slots=True)
class NodeEnd(Event):
    kind: ClassVar[str] = "node_end"
    task: int
    node: int
    status: str  # "ok" or "error"


@dataclass(frozen=True, slots=True)
class Hook(Event):
    kind: ClassVar[str] = "hook"
    task: int
    node: int
    hook: str  # "tensor_pre", "retains_grad", "pre", "post" or "post_accumulate"
    name: str  # qualified name of the hook function


@dataclass(frozen=True, slots=True)
class AccumulateGradUpdate(Event):
    kind: ClassVar[str] = "accumulate_grad"
    task: int
    node: int  # the AccumulateGrad node
    tensor: int  # the leaf
    mode: str  # "set" (grad was None), "accumulate" (added in place) or "replace"
    before: Stats | None  # the leaf's .grad before (None if it had none)
    after: Stats
    values: Any = None


@dataclass(frozen=True, slots=True)
class CapturedGrad(Event):
    kind: ClassVar[str] = "captured_grad"
    task: int
    node: int  # node whose input is captured
    input_nr: int
    index: int  # position in the grad() outputs
    stats: Stats | None  # None if the captured gradient is undefined, or its values cannot be read
    values: Any = None


@dataclass(frozen=True, slots=True)
class SavedRelease(Event):
    """Saved tensors freed after the node ran without retain_graph."""

    kind: ClassVar[str] = "saved_release"
    node: int
    count: int  # number of saved variables released


@dataclass(frozen=True, slots=True)
class Callback(Event):
    """A final callback queued with queue_callback, run as the task ends."""

    kind: ClassVar[str] = "callback"
    task: int
    name: str


@dataclass(frozen=True, slots=True)
class PoolPush(Event):
    """Reentrant depth limit reached: the task is handed to the reentrant thread pool."""

    kind: ClassVar[str] = "pool_push"
    task: int
    depth: int  # total reentrant depth at the hand-off


@dataclass(frozen=True, slots=True)
class PoolTake(Event):
    kind: ClassVar[str] = "pool_take"
    task: int


# --- failures ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Error(Event):
    kind: ClassVar[str] = "error"
    task: int | None
    node: int | None  # node that raised, if any
    type: str  # exception class name, e.g. "RuntimeError"
    message: str
    forward: str | None = None  # forward traceback of the node (anomaly mode), if known
    # "file:line" of the user's code it came from: the innermost frame of the program in its
    # traceback (a hook's, a custom Function's), else the user's call that was handling it
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Anomaly(Event):
    """Anomaly mode found NaN in a node's output."""

    kind: ClassVar[str] = "anomaly"
    task: int
    node: int
    message: str  # e.g. "Function 'DivBackward0' returned nan values in its 0th output."
    forward: str | None  # the forward traceback that created the node


# --- provenance (format 4) -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineInfo(Event):
    """Which engine the trace recorded. A trace without it recorded gradviz's own engine."""

    kind: ClassVar[str] = "engine"
    engine: str  # "gradviz" or "torch"
    torch_version: str | None  # torch.__version__ when the engine is torch


@dataclass(frozen=True, slots=True)
class Derived(Event):
    """Events the recorder inferred rather than saw: a hook of torch's engine saw every other event.

    A recording of gradviz's own engine has none (the engine reports each step itself)."""

    kind: ClassVar[str] = "derived"
    events: tuple[int, ...]  # seqs of earlier events that were derived from the graph and the observed order


# --- distributed: torch.distributed and DDP (format 4, additive) ------------------------------
# One trace per rank. All observed (a wrapper or hook of torch's saw it) unless a field says
# derived. Collectives are numbered per process group in the order this rank called them; every
# rank calls a group's collectives in the same order, so (group, number) names one collective
# across the ranks' traces.


@dataclass(frozen=True, slots=True)
class DistInit(Event):
    """The default process group exists (init_process_group returned), and the clock mark that
    lines this rank's times up with the other ranks'."""

    kind: ClassVar[str] = "dist_init"
    backend: str  # the group's backend, e.g. "gloo" or "nccl"
    rank: int  # this process's rank in the default group
    world_size: int
    clock: int | None  # ts when a barrier of all ranks returned here; None: no barrier was run
    wall: int | None  # time.time_ns() at that moment (ranks on several machines)


@dataclass(frozen=True, slots=True)
class DdpInit(Event):
    """A DistributedDataParallel module was made (its constructor returned)."""

    kind: ClassVar[str] = "ddp_init"
    ddp: int  # id of the DDP module in this trace, from 1
    params: tuple[str, ...]  # module path of each parameter DDP reduces, in DDP's index order
    tensors: tuple[int, ...]  # tensor id (tensor_created) of each of those parameters, same order
    bucket_cap: int  # bytes: DDP's bucket_cap_mb
    find_unused: bool  # find_unused_parameters
    group: str  # the process group's name ("0": the default group)


@dataclass(frozen=True, slots=True)
class DdpForward(Event):
    """An iteration begins: the DDP module's forward was called (a forward pre-hook)."""

    kind: ClassVar[str] = "ddp_forward"
    ddp: int
    iteration: int  # from 1, counting forward calls of this DDP module
    source: str | None = None  # "file:line" of the user's code that called the forward


@dataclass(frozen=True, slots=True)
class DdpGrads(Event):
    """Which parameters one iteration's backward gave a gradient: written when the next forward
    begins, or when the trace ends."""

    kind: ClassVar[str] = "ddp_grads"
    ddp: int
    iteration: int  # the iteration that ended
    ready: tuple[int, ...]  # ddp_init indices of the parameters given a gradient (post-accumulate-grad hook ran)
    buckets: tuple[int, ...]  # indices of the buckets the comm hook was given in that iteration


@dataclass(frozen=True, slots=True)
class BucketReady(Event):
    """DDP's reducer handed a full bucket to the comm hook (the hook was called)."""

    kind: ClassVar[str] = "bucket_ready"
    ddp: int
    iteration: int
    bucket: int  # GradBucket.index()
    params: tuple[int, ...]  # ddp_init indices of GradBucket.parameters()
    numel: int  # elements of GradBucket.buffer()
    bytes: int  # size of the buffer
    dtype: str
    last: bool  # GradBucket.is_last(): the iteration's last bucket
    hook: str  # the comm hook it went to: the user's (qualified name), or DDP's default allreduce


@dataclass(frozen=True, slots=True)
class BucketDone(Event):
    """The future the comm hook returned for a bucket completed."""

    kind: ClassVar[str] = "bucket_done"
    ddp: int
    iteration: int
    bucket: int
    status: str  # "ok" or "error"


@dataclass(frozen=True, slots=True)
class CollectiveBegin(Event):
    """The program (or a comm hook) called a torch.distributed collective."""

    kind: ClassVar[str] = "collective_begin"
    op: str  # torch.distributed's function name: "all_reduce", "all_gather", "broadcast", "barrier", ...
    group: str  # the process group's name ("0": the default group)
    group_size: int
    number: int  # derived: count of this group's collectives so far, from 1 (the same on every rank)
    shape: tuple[int, ...] | None  # the first tensor argument's shape; None if there is none
    dtype: str | None
    bytes: int  # size of the tensor argument(s) given first (the input, or the output list)
    async_op: bool
    ddp: int | None = None  # the DDP module whose comm hook called it
    bucket: int | None = None  # the bucket it reduces


@dataclass(frozen=True, slots=True)
class CollectiveEnd(Event):
    """A collective returned (async_op=False) or its work's future completed (async_op=True)."""

    kind: ClassVar[str] = "collective_end"
    op: str
    group: str
    number: int  # as its collective_begin
    status: str  # "ok" or "error"
    error: str | None = None  # "Type: message" when status is "error"


# --- the forward side (additive in format 4): what ``gradviz why`` reasons over -------------
# Tensor ids here are the engine's ids for any tensor (not only leaves), so they may name
# tensors no tensor_created announced. ``source`` is the user's "file:line", never a frame of
# gradviz or torch. From real torch they come from a TorchFunctionMode and tensor methods the
# recorder wraps: observed, as gradviz's own ops report them.


@dataclass(frozen=True, slots=True)
class ForwardOp(Event):
    """An op of the forward ran: a node-making op, or any op with a tensor that requires grad
    among its inputs while grad mode was off (where a no_grad block cut a leaf off)."""

    kind: ClassVar[str] = "forward_op"
    op: str  # the op's name, e.g. "mul", "linear" (torch: the function's name)
    inputs: tuple[int, ...]  # tensor ids of its tensor inputs, in argument order
    output: int | None  # tensor id of its (first) tensor output; None when it returned none
    grad_fn: int | None  # id of the backward node it made (node_created comes first); None: none
    requires_grad: bool  # whether the output requires grad
    grad_mode: str  # "grad" (enabled), "no_grad" (disabled) or "inference" (inference_mode)
    finite: bool | None  # whether every element of the output is finite; None: not a float tensor
    source: str | None  # "file:line" of the user's call
    columns: tuple[int, int] | None = None  # the call's columns on that line, as node_created's


@dataclass(frozen=True, slots=True)
class VersionBump(Event):
    """A tensor was written in place: its version counter (shared with its views) went up."""

    kind: ClassVar[str] = "version_bump"
    tensor: int  # tensor id of the tensor written (any tensor, not only announced leaves)
    version: int  # the version after the write
    op: str  # the in-place op the user called, torch's name: "add_", "sin_", "normal_", "__setitem__"
    source: str | None  # "file:line" of the user's call
    columns: tuple[int, int] | None = None  # the call's columns on that line, as node_created's


@dataclass(frozen=True, slots=True)
class GradMode(Event):
    """A grad-mode block was entered or left (no_grad, enable_grad, set_grad_enabled, inference_mode)."""

    kind: ClassVar[str] = "grad_mode"
    mode: str  # "no_grad", "enable_grad", "set_grad_enabled" or "inference_mode"
    enter: bool  # True entering the block, False leaving it
    enabled: bool  # grad mode on the thread after this event
    source: str | None  # "file:line" of the ``with`` (or the set_grad_enabled call)


@dataclass(frozen=True, slots=True)
class GradReset(Event):
    """A leaf's ``.grad`` was set back: to None (``p.grad = None``, zero_grad()) or to zeros."""

    kind: ClassVar[str] = "grad_reset"
    tensor: int  # tensor id of the leaf
    how: str  # "none" (set to None) or "zero" (zero_grad(set_to_none=False))
    source: str | None  # "file:line" of the user's call


@dataclass(frozen=True, slots=True)
class NonLeafGradRead(Event):
    """The program read ``.grad`` of a tensor that is not a leaf and does not retain its
    gradient: the read gives None (torch warns), whatever backward does."""

    kind: ClassVar[str] = "non_leaf_grad_read"
    tensor: int  # tensor id of the non-leaf whose .grad was read
    source: str | None  # "file:line" of the user's read


@dataclass(frozen=True, slots=True)
class WarningShown(Event):
    """A warning the program gave that passed Python's filters: shown to the user, or caught by
    ``warnings.catch_warnings(record=True)``."""

    kind: ClassVar[str] = "warning"
    category: str  # the warning's class name, e.g. "UserWarning"
    message: str  # its text (the first 1,000 characters)
    at: str | None  # "file:line" Python names in the warning (torch's own file, for many of torch's)
    source: str | None  # "file:line" of the user's code that was running (the innermost frame of it)
    shown: bool = True  # False: caught by catch_warnings(record=True), not printed


@dataclass(frozen=True, slots=True)
class Detach(Event):
    """A tensor's value left autograd: .detach(), .data, .numpy(), .item(), torch.tensor(t)."""

    kind: ClassVar[str] = "detach"
    op: str  # "detach", "data", "numpy", "item", "tolist" or "tensor" (torch.tensor(t))
    tensor: int  # tensor id of the tensor that had history (or required grad)
    output: int | None  # tensor id of the result; None for .numpy()/.item() (not a tensor)
    source: str | None  # "file:line" of the user's call


@dataclass(frozen=True, slots=True)
class BackwardCall(Event):
    """The user called backward() or autograd.grad(); the task it makes (if any) comes next on
    the same thread."""

    kind: ClassVar[str] = "backward_call"
    api: str  # "backward" or "grad"
    tensors: tuple[int, ...]  # tensor ids of the roots (the tensors backward was called on)
    inputs: tuple[int, ...]  # tensor ids of inputs= / grad()'s inputs; empty: all leaves
    retain_graph: bool  # the graph is kept after the call
    source: str | None  # "file:line" of the user's call


@dataclass(frozen=True, slots=True)
class TensorAtEnd(Event):
    """A tensor the program held by name when the recording stopped, and its ``.grad`` then
    (the end state a question like "why is w.grad None" is about)."""

    kind: ClassVar[str] = "tensor_at_end"
    name: str  # the variable, or module path ("model.fc1.weight"), that held it
    tensor: int  # tensor id
    leaf: bool  # is_leaf
    requires_grad: bool
    grad: str  # "none" (.grad is None), "zero" (all zeros), "nonzero", "nonfinite" (NaN/Inf in it)


EVENT_TYPES: tuple[type[Event], ...] = (
    TraceBegin, TraceEnd, ThreadStart, ThreadEnd, QueueCreated,
    TensorCreated, NodeCreated, EdgeCreated,
    TaskBegin, TaskEnd, Dependencies, ExecInfo, DependencyDecrement,
    QueuePush, QueuePop, BufferAdd, NotReadyPark, NotReadyTake,
    NodeBegin, NodeEnd, Hook, AccumulateGradUpdate, CapturedGrad, SavedRelease,
    Callback, PoolPush, PoolTake, Error, Anomaly, EngineInfo, Derived,
    DistInit, DdpInit, DdpForward, DdpGrads, BucketReady, BucketDone, CollectiveBegin, CollectiveEnd,
    ForwardOp, VersionBump, GradMode, GradReset, NonLeafGradRead, WarningShown, Detach, BackwardCall, TensorAtEnd,
)

KINDS: dict[str, type[Event]] = {t.kind: t for t in EVENT_TYPES}


def field_names(cls: type[Event]) -> tuple[str, ...]:
    """The fields of an event type in file order (common fields first)."""
    return tuple(f.name for f in fields(cls))


@functools.cache
def field_types(cls: type[Event]) -> dict[str, Any]:
    """Each field's type (``typing.get_type_hints``, the annotations evaluated). Once per type:
    the codecs build their readers from them at import, and evaluating a type's string
    annotations each time a field was looked at was most of ``import gradviz.trace``'s time."""
    return typing.get_type_hints(cls)
