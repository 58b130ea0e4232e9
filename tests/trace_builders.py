"""Hand-made traces for tests, built with ``tests.synth.TraceBuilder``.

Each function returns a ``Trace`` shaped like what the engine records for a small program, so
tests of readers (render, replay, export) run without the engine. The events follow the
engine's order (see ``TraceBuilder.backward``). Node ids are assigned in creation order; each
builder documents them so tests can name nodes.
"""

from __future__ import annotations

from gradviz.trace.model import Trace
from tests.synth import TraceBuilder

DIAMOND_SRC = "samples/diamond.py"


def diamond(*, keep_graph: bool = False) -> Trace:
    """a (leaf); b = a*2; c = a*3; d = b + c; d.sum().backward().

    Node ids: 1 AccumulateGrad(a), 2 MulBackward0(b), 3 MulBackward0(c), 4 AddBackward0(d),
    5 SumBackward0. AccumulateGrad(a) gets two gradients, so it parks in not_ready.
    """
    b = TraceBuilder(argv=(DIAMOND_SRC,))
    a = b.leaf("a", (2,), source=f"{DIAMOND_SRC}:4")
    mb = b.op("MulBackward0", [a, None], saved=((),), source=f"{DIAMOND_SRC}:5")
    mc = b.op("MulBackward0", [a, None], saved=((),), source=f"{DIAMOND_SRC}:6")
    d = b.op("AddBackward0", [mb, mc], source=f"{DIAMOND_SRC}:7")
    s = b.op("SumBackward0", [d], source=f"{DIAMOND_SRC}:8", shape=())
    b.backward(s, keep_graph=keep_graph)
    return b.trace()


def reentrant() -> Trace:
    """A custom Function whose backward runs a nested backward (reentrant depth 1).

    Outer graph: 1 AccumulateGrad(x), 2 ExpBackward0 -> x, 3 CheckpointFunctionBackward -> 2,
    4 SumBackward0 -> 3 (task 1). While 3 runs it builds an inner graph, 5 AccumulateGrad(w),
    6 MulBackward0 -> 5, 7 SumBackward0 -> 6, and runs it as task 2 at depth 1.
    """
    src = "samples/reentrant.py"
    b = TraceBuilder(argv=(src,))
    x = b.leaf("x", (3,), source=f"{src}:10")
    e = b.op("ExpBackward0", [x], saved=((3,),), source=f"{src}:12", shape=(3,))
    ck = b.op("CheckpointFunctionBackward", [e], source=f"{src}:13", shape=(3,))
    s = b.op("SumBackward0", [ck], source=f"{src}:14", shape=())

    def inner(tb: TraceBuilder) -> None:
        w = tb.leaf("w", (3,), source=f"{src}:6")
        m = tb.op("MulBackward0", [w, None], saved=((3,),), source=f"{src}:7", shape=(3,))
        r = tb.op("SumBackward0", [m], source=f"{src}:8", shape=())
        tb.backward(r)

    b.backward(s, during={ck: inner})
    return b.trace()


def pruned() -> Trace:
    """w1, w2 leaves; y = w1*w2; y.sum().backward(inputs=[w1]): AccumulateGrad(w2) is pruned.

    Node ids: 1 AccumulateGrad(w1), 2 AccumulateGrad(w2), 3 MulBackward0, 4 SumBackward0.
    """
    b = TraceBuilder(argv=("prune.py",))
    w1 = b.leaf("w1", (2,), source="prune.py:3")
    w2 = b.leaf("w2", (2,), source="prune.py:4")
    m = b.op("MulBackward0", [w1, w2], saved=((2,), (2,)), source="prune.py:5")
    s = b.op("SumBackward0", [m], source="prune.py:6", shape=())
    b.backward(s, inputs=[w1])
    return b.trace()


def failing(*, nan: bool = False) -> Trace:
    """x leaf; y = log(x); z = y.sum(); backward, where LogBackward0 raises (or returns NaN).

    Node ids: 1 AccumulateGrad(x), 2 LogBackward0, 3 SumBackward0.
    """
    b = TraceBuilder(argv=("fail.py",))
    x = b.leaf("x", (2,), source="fail.py:2")
    lg = b.op("LogBackward0", [x], saved=((2,),), source="fail.py:3")
    s = b.op("SumBackward0", [lg], source="fail.py:4", shape=())
    if nan:
        b.backward(s, nan_at=lg)
    else:
        b.backward(s, error_at=lg)
    return b.trace()


def two_devices() -> Trace:
    """x on cpu, moved to virtual:0 and back: a graph whose nodes live on two devices.

    Node ids: 1 AccumulateGrad(x), 2 ToCopyBackward0 (cpu), 3 MulBackward0 (virtual:0),
    4 ToCopyBackward0 (virtual:0), 5 SumBackward0 (cpu).
    """
    b = TraceBuilder(argv=("devices.py",), devices=("cpu", "virtual:0"))
    x = b.leaf("x", (2,), source="devices.py:3")
    to = b.op("ToCopyBackward0", [x], source="devices.py:4")
    m = b.op("MulBackward0", [to, None], saved=((),), device="virtual:0", source="devices.py:5")
    back = b.op("ToCopyBackward0", [m], device="virtual:0", source="devices.py:6")
    s = b.op("SumBackward0", [back], source="devices.py:7", shape=())
    b.backward(s)
    return b.trace()


HOSTILE_NAMES = (
    'Evil"Backward0',
    "<script>alert(1)</script>",
    "{brace}|pipe|[bracket]",
    "new\nline\r\ttab",
    "amp & entity &lt; &#0; ]]> -->",
    "back\\slash\\",
    "\\N\\G\\L\\l",
    '"; ] node [shape=none label=<<b>x</b>>',
    "\x00\x01\x1b[31mansi\x7f",
    "unicode ∂ ✓ \ud800 surrogate",
)


def hostile() -> Trace:
    """Node, leaf and source names full of quotes, angle brackets, braces, newlines and worse."""
    b = TraceBuilder(argv=("<evil>.py", '--name="x"'))
    leaves = [
        b.leaf(name, (2,), source=f'{name}.py:{i}"<>') for i, name in enumerate(HOSTILE_NAMES[:4])
    ]
    prev: int | None = None
    for i, name in enumerate(HOSTILE_NAMES):
        prev = b.op(name, [prev, leaves[i % len(leaves)]], saved=((2,),), source=f"{name}:{i}")
    assert prev is not None
    b.backward(prev)
    return b.trace()


def unbind_diamond() -> Trace:
    """x leaf; p, q = x.unbind(); (p*3 + q.exp()).backward(): a join node with two InputBuffer slots.

    Node ids: 1 AccumulateGrad(x), 2 UnbindBackward0 (2 inputs), 3 MulBackward0 -> (2, slot 0),
    4 ExpBackward0 -> (2, slot 1), 5 AddBackward0 -> 3, 4. ExpBackward0 (higher sequence_nr) runs
    first, so UnbindBackward0 parks with slot 1 set and slot 0 missing until MulBackward0 runs.
    """
    src = "unbind.py"
    b = TraceBuilder(argv=(src,))
    x = b.leaf("x", (2,), source=f"{src}:3")
    ub = b.op("UnbindBackward0", [x], num_inputs=2, source=f"{src}:4", shape=())
    m = b.op("MulBackward0", [(ub, 0), None], saved=((),), source=f"{src}:5", shape=())
    e = b.op("ExpBackward0", [(ub, 1)], saved=((),), source=f"{src}:5", shape=())
    add = b.op("AddBackward0", [m, e], source=f"{src}:5", shape=())
    b.backward(add)
    return b.trace()
