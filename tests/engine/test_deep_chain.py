"""No recursion over the graph: a chain of 100,000 nodes runs forward, backward, grad(), a walk
over next_functions, and is freed, all under the default recursion limit.

One chain is built per module (the forward is the slow part) and used by every test in order.
"""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

import gradviz as gv

N = 100_000


@pytest.fixture(scope="module")
def chain():
    assert sys.getrecursionlimit() <= 1000, "these tests must run under the default recursion limit"
    x = gv.tensor([1.0, 2.0], dtype=gv.float64, requires_grad=True)
    h = x
    for i in range(N):
        # Alternate ops so several node kinds (and saved scalars/tensors) sit in the chain.
        h = h * 1.0 if i % 2 else h + 0.0
    return {"x": x, "h": h}


def test_backward_through_100k_nodes(chain):
    x, h = chain["x"], chain["h"]
    h.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [1.0, 1.0]


def test_grad_through_100k_nodes(chain):
    x, h = chain["x"], chain["h"]
    (g,) = gv.autograd.grad(h, x, gv.tensor([2.0, 3.0], dtype=gv.float64), retain_graph=True)
    assert g.tolist() == [2.0, 3.0]


def test_walk_next_functions(chain):
    fn, depth = chain["h"].grad_fn, 0
    while fn.next_functions:
        fn = fn.next_functions[0][0]
        depth += 1
    assert depth == N and type(fn).__name__ == "AccumulateGrad"


def test_chain_is_freed_without_recursion(chain):
    # Dropping the last reference frees 100,000 nodes; that must not recurse either.
    ref = weakref.ref(chain["h"].grad_fn)
    del chain["h"]
    gc.collect()
    assert ref() is None


@pytest.mark.slow
def test_inplace_chain_of_100k_nodes():
    # Each in-place op puts a new node in front of the last: as deep as the out-of-place chain.
    x = gv.tensor([1.0, 2.0], dtype=gv.float64, requires_grad=True)
    h = x * 1
    for _ in range(N):
        h.mul_(1.0)
    assert h._version == N
    h.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    del h
    gc.collect()
