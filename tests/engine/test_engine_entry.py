"""The backward entry's fixed-cost paths (issue 7, W3): ``loss.backward()``'s shortcut past
the tuple conversions, the cached implicit root gradient, AccumulateGrad built without
Node.__init__, and a task completed without post-processing when no callback is queued. Each
must behave exactly as the general path does (torch's behaviour)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradviz
from gradviz.autograd import Variable
from gradviz.autograd.graph import MAX_SEQUENCE_NR, AccumulateGrad


def test_scalar_loss_root_gradient_is_fresh_each_call() -> None:
    # The implicit gradient of a leaf loss becomes its .grad (stolen): changing it in place must
    # not change the next call's root gradient (it is a copy of a cached one, never the cache).
    x = gradviz.tensor(np.float32(3.0), requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0
    first = x.grad
    first.mul_(5.0)
    x.grad = None
    x.backward()
    assert x.grad.item() == 1.0
    assert x.grad is not first
    assert first.item() == 5.0


@pytest.mark.parametrize("dtype", [gradviz.float32, gradviz.float64])
def test_scalar_loss_gradient_dtype(dtype: gradviz.dtype) -> None:
    w = gradviz.ones(3, dtype=dtype, requires_grad=True)
    (w * 2.0).sum().backward()
    assert w.grad.dtype is dtype
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))


def test_backward_errors_as_the_general_path() -> None:
    x = gradviz.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2.0).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        gradviz.ones(()).backward()
    # An integer tensor cannot require grad: torch's message is the no-grad_fn one.
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        gradviz.tensor(3, dtype=gradviz.int64).backward()


def test_retain_graph_and_create_graph_through_the_shortcut() -> None:
    x = gradviz.tensor(2.0, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 8.0
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    x.grad = None
    z = (x * x * x).sum()
    z.backward(create_graph=True)
    assert x.grad.item() == 12.0
    assert x.grad.grad_fn is not None


def test_accumulator_fields_as_node_init() -> None:
    x = gradviz.ones(2, requires_grad=True)
    acc = (x * 2.0).grad_fn.next_functions[0][0]
    assert type(acc) is AccumulateGrad
    assert acc.variable is x
    assert acc.sequence_nr == MAX_SEQUENCE_NR
    assert acc.topological_nr == 0
    assert acc.next_functions == ()
    assert acc.num_inputs == 1
    assert acc.input_metadata[0][0] == (2,)
    # The direct constructor gives the same node.
    direct = AccumulateGrad(x)
    assert direct.sequence_nr == MAX_SEQUENCE_NR and direct.variable is x
    assert direct.lock is not acc.lock


def test_leaf_hook_registered_before_first_use_runs() -> None:
    x = gradviz.ones(2, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * 3.0).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.full(2, 3.0))


def test_grad_never_aliases_a_visible_gradient() -> None:
    # A hook keeps the incoming gradient: .grad must be a copy, not that tensor.
    x = gradviz.ones(4, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2.0).sum().backward()
    assert x.grad is not kept[0]
    x.grad.add_(1.0)
    np.testing.assert_array_equal(kept[0].numpy(), np.full(4, 2.0))


def test_callbacks_still_run_and_tasks_complete() -> None:
    x = gradviz.ones(2, requires_grad=True)
    called = []

    def hook(g: gradviz.Tensor) -> None:
        Variable._execution_engine.queue_callback(lambda: called.append("cb"))

    x.register_hook(hook)
    (x * 2.0).sum().backward()
    assert called == ["cb"]
    # The next backward (no callback queued) completes through the shortcut.
    x.grad = None
    y = gradviz.ones(2, requires_grad=True)
    (y * 2.0).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.full(2, 2.0))
    assert called == ["cb"]


def test_grad_returns_captures_without_post_processing() -> None:
    x = gradviz.ones(3, requires_grad=True)
    (g,) = gradviz.autograd.grad((x * 4.0).sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.full(3, 4.0))
    assert x.grad is None


def test_two_threads_accumulate_into_one_leaf() -> None:
    w = gradviz.ones(8, requires_grad=True)
    n, per = 4, 50
    barrier = threading.Barrier(n)

    def work() -> None:
        barrier.wait()
        for _ in range(per):
            (w * 1.0).sum().backward()

    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(8, float(n * per)))
