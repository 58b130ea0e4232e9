"""Error cases: gradviz raises torch's exception type with torch's key words.

Each scenario runs on torch 2.13 and on gradviz; both must raise the same exception type, and
both messages must contain the listed key words (so the key words are checked against torch too,
not only written down).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from _diff import leaf

import gradviz


def _backward_twice(T):
    x = leaf(T, 3)
    y = (x.exp() * x).sum()
    y.backward()
    y.backward()


def _inplace_saved(T):
    x = leaf(T, 3)
    h = x.exp()
    y = (h * 2).sum() + h.exp().sum()
    h.add_(1)  # exp saved its result h
    y.backward()


def _inplace_saved_input(T):
    x = leaf(T, 3)
    h = x * 1
    y = (h * h).sum()
    h.mul_(2)
    y.backward()


def _unused_input(T):
    x = leaf(T, 3)
    z = leaf(T, 3, seed=1)
    y = (x * 2).sum()
    T.autograd.grad(y, [x, z])


def _implicit_nonscalar(T):
    x = leaf(T, 3)
    (x * 2).backward()


def _no_grad_fn(T):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    (x * 2).sum().backward()


def _no_grad_fn_grad(T):
    x = leaf(T, 3)
    c = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    T.autograd.grad((c * 2).sum(), x)


def _grad_of_nonrequiring_input(T):
    x = leaf(T, 3)
    c = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    T.autograd.grad((x * c).sum(), c)


def _anomaly_nan(T):
    x = T.tensor([0.0, 1.0], dtype=T.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.detect_anomaly():
            y = x.sqrt()
            y.backward(T.tensor([0.0, 1.0], dtype=T.float64))


def _make_failing_function(T):
    class Boom(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    return Boom


def _custom_backward_raises(T):
    Boom = _make_failing_function(T)
    x = leaf(T, 3)
    Boom.apply(x).sum().backward()


def _custom_backward_wrong_count(T):
    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = leaf(T, 3)
    Two.apply(x).sum().backward()


def _inplace_leaf(T):
    x = leaf(T, 3)
    x.add_(1)


def _inplace_leaf_mul(T):
    x = leaf(T, 3)
    x.mul_(2)


def _inplace_view_of_leaf(T):
    leaf(T, 2, 3)[0].mul_(2)


def _inplace_unbind_output(T):
    (leaf(T, 2, 3) * 1).unbind()[1].mul_(2)


def _inplace_split_output(T):
    (leaf(T, 4, 3) * 1).split(2)[0].add_(1)


def _setitem_on_leaf(T):
    x = leaf(T, 2, 3)
    x[0] = 1.0


def _inplace_no_grad_view(T):
    b = leaf(T, 2, 3) * 1
    with T.no_grad():
        v = b[0]
    v.mul_(2)


def _gradient_shape_mismatch(T):
    x = leaf(T, 3)
    (x * 2).backward(T.ones(2, dtype=T.float64))


def _grad_outputs_shape_mismatch(T):
    x = leaf(T, 2, 3)
    T.autograd.grad(x * 2, x, T.ones(3, 2, dtype=T.float64))


def _requires_grad_int(T):
    T.tensor([1, 2, 3]).requires_grad_()


def _requires_grad_nonleaf_off(T):
    x = leaf(T, 3)
    (x * 2).requires_grad_(False)


def _numpy_requires_grad(T):
    leaf(T, 3).numpy()


def _item_many(T):
    leaf(T, 3).item()


def _view_noncontiguous(T):
    leaf(T, 2, 3).t().view(6)


def _retain_grad_no_grad(T):
    T.tensor([1.0]).retain_grad()


def _hook_no_grad(T):
    T.tensor([1.0]).register_hook(lambda g: g)


def _mm_shapes(T):
    T.mm(leaf(T, 2, 3), leaf(T, 2, 3))


def _backward_empty_inputs(T):
    x = leaf(T, 3)
    (x * 2).sum().backward(inputs=[])


def _bool_sub(T):
    T.tensor([True, False]) - T.tensor([True, True])


def _bool_sub_scalar(T):
    T.tensor([True, False]) - 1


def _bool_rsub(T):
    1.0 - T.tensor([True, False])


def _cat_empty(T):
    T.cat([])


def _implicit_grad_int(T):
    x = leaf(T, 3)
    T.autograd.grad((x * 2).sum(), x, grad_outputs=[3])


SCENARIOS = {
    "backward_twice": (_backward_twice, ["Trying to backward through the graph a second time",
                                         "retain_graph=True"]),
    "inplace_saved_result": (_inplace_saved, ["one of the variables needed for gradient computation has been "
                                              "modified by an inplace operation", "is at version 1",
                                              "expected version 0 instead", "which is output 0 of "]),
    "inplace_saved_input": (_inplace_saved_input, ["modified by an inplace operation", "is at version 1",
                                                   "expected version 0 instead", "DoubleTensor [3]"]),
    "unused_input": (_unused_input, ["The differentiated Tensor at index 1 appears to not have been used in the graph",
                                     "allow_unused=True"]),
    "implicit_nonscalar": (_implicit_nonscalar, ["grad can be implicitly created only for scalar outputs"]),
    "no_grad_fn": (_no_grad_fn, ["element 0 of tensors does not require grad and does not have a grad_fn"]),
    "no_grad_fn_grad": (_no_grad_fn_grad, ["element 0 of tensors does not require grad and does not have a grad_fn"]),
    "grad_of_nonrequiring": (_grad_of_nonrequiring_input, ["One of the differentiated Tensors does not require grad"]),
    "anomaly_nan": (_anomaly_nan, ["Function 'SqrtBackward0' returned nan values in its 0th output."]),
    "custom_backward_raises": (_custom_backward_raises, ["boom in backward"]),
    "custom_backward_wrong_count": (_custom_backward_wrong_count, ["function TwoBackward returned an incorrect "
                                                                   "number of gradients (expected 1, got 2)"]),
    "inplace_leaf": (_inplace_leaf, ["a leaf Variable that requires grad is being used in an in-place operation."]),
    "inplace_leaf_mul": (_inplace_leaf_mul, ["a leaf Variable that requires grad is being used in an in-place "
                                             "operation."]),
    "inplace_view_of_leaf": (_inplace_view_of_leaf, ["a view of a leaf Variable that requires grad is being used "
                                                     "in an in-place operation."]),
    "inplace_unbind_output": (_inplace_unbind_output, ["Output 1 of Unbind is a view and is being modified inplace.",
                                                       "Such functions do not allow the output views to be modified"]),
    "inplace_split_output": (_inplace_split_output, ["Output 0 of Split is a view and is being modified inplace."]),
    "setitem_on_leaf": (_setitem_on_leaf, ["a view of a leaf Variable that requires grad is being used in an in-place"
                                           " operation."]),
    "inplace_no_grad_view": (_inplace_no_grad_view, ["A view was created in no_grad mode and is being modified "
                                                     "inplace with grad mode enabled."]),
    "gradient_shape_mismatch": (_gradient_shape_mismatch, ["Mismatch in shape", "grad_output[0] has a shape of",
                                                           "and output[0] has a shape of"]),
    "grad_outputs_shape_mismatch": (_grad_outputs_shape_mismatch, ["Mismatch in shape"]),
    "requires_grad_int": (_requires_grad_int, ["only Tensors of floating point", "can require gradients"]),
    "requires_grad_nonleaf_off": (_requires_grad_nonleaf_off, ["you can only change requires_grad flags of leaf "
                                                               "variables."]),
    "numpy_requires_grad": (_numpy_requires_grad, ["Can't call numpy() on Tensor that requires grad",
                                                   "Use tensor.detach().numpy() instead."]),
    "item_many": (_item_many, ["a Tensor with 3 elements cannot be converted to Scalar"]),
    "view_noncontiguous": (_view_noncontiguous, ["view size is not compatible with input tensor's size and stride",
                                                 "Use .reshape(...) instead."]),
    "retain_grad_no_grad": (_retain_grad_no_grad, ["can't retain_grad on Tensor that has requires_grad=False"]),
    "hook_no_grad": (_hook_no_grad, ["cannot register a hook on a tensor that doesn't require gradient"]),
    "mm_shapes": (_mm_shapes, ["mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"]),
    "backward_empty_inputs": (_backward_empty_inputs, ["`inputs` argument to `backward()` cannot be empty."]),
    "bool_sub": (_bool_sub, ["Subtraction, the `-` operator, with two bool tensors is not supported."]),
    "bool_sub_scalar": (_bool_sub_scalar, ["Subtraction, the `-` operator, with a bool tensor is not supported."]),
    "bool_rsub": (_bool_rsub, ["Subtraction, the `-` operator, with a bool tensor is not supported."]),
    "cat_empty": (_cat_empty, ["expected a non-empty list of Tensors"]),
    "grad_outputs_not_tensor": (_implicit_grad_int, ["gradients can be either Tensors or None, but got int"]),
}


def _raise(fn, T):
    with pytest.raises(Exception) as info:  # noqa: B017,PT011 - the type is compared below
        fn(T)
    return info.value


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_error_matches_torch(name):
    fn, words = SCENARIOS[name]
    ref = _raise(fn, torch)
    got = _raise(fn, gradviz)
    assert type(got) is type(ref), (
        f"torch raised {type(ref).__name__}: {ref}\ngradviz raised {type(got).__name__}: {got}"
    )
    for w in words:
        assert w in str(ref), f"key word not in torch's message: {w!r}\n{ref}"
        assert w in str(got), f"key word {w!r} missing from gradviz's message:\n{got}"


def test_custom_backward_exception_is_the_users_exception():
    # torch re-raises the user's exception object type (ValueError here) out of backward().
    Boom = _make_failing_function(gradviz)
    x = leaf(gradviz, 3)
    with pytest.raises(ValueError, match="boom in backward"):
        Boom.apply(x).sum().backward()
    # The engine is usable afterwards.
    y = (x * 2).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_anomaly_mode_warns_with_forward_traceback():
    for T in (torch, gradviz):
        x = T.tensor([0.0, 1.0], dtype=T.float64, requires_grad=True)
        # pytest.warns shows every warning inside it: numpy's 0/0 in sqrt's backward (which
        # gradviz silences outside a test) is kept out with errstate.
        with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"), np.errstate(all="ignore"):
            with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
                with T.autograd.detect_anomaly():
                    y = x.sqrt()
                    y.backward(T.tensor([0.0, 1.0], dtype=T.float64))


def test_no_error_without_anomaly_mode():
    x = gradviz.tensor([0.0, 1.0], dtype=gradviz.float64, requires_grad=True)
    x.sqrt().backward(gradviz.tensor([0.0, 1.0], dtype=gradviz.float64))
    assert x.grad.numpy()[1] == 0.5


def test_backward_twice_retain_graph_ok_then_fails():
    for T in (torch, gradviz):
        x = leaf(T, 3)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()


class _Sq:
    """A custom Function that saves its output (torch names it 'Sq' in the message)."""

    @staticmethod
    def make(T):
        class Sq(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * x
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        return Sq


def _saved_custom_output(T):
    x = leaf(T, 3)
    y = _Sq.make(T).apply(x)
    z = y.sum()
    y.add_(1)
    z.backward()


def _saved_view_input(T):
    x = leaf(T, 3, 3)
    h = (x * 1)[0]
    y = (h * h).sum()
    h.mul_(2)
    y.backward()


def _saved_leaf_input(T):
    x = leaf(T, 3)
    w = T.ones(3)
    y = (x * w).sum()
    w.mul_(2)
    y.backward()


def _saved_input_under_anomaly(T):
    with T.autograd.set_detect_anomaly(True), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode's forward-traceback warning
        _inplace_saved_input(T)


@pytest.mark.parametrize("prog", [_inplace_saved, _inplace_saved_input, _saved_custom_output, _saved_view_input,
                                  _saved_leaf_input, _saved_input_under_anomaly])
def test_inplace_message_exact(prog):
    # torch names the op that made the tensor ('output 0 of Exp' for ExpBackward0, 'of Sq' for a
    # Function Sq), none for a leaf, and changes its hint under anomaly mode
    msgs = []
    for T in (torch, gradviz):
        with pytest.raises(RuntimeError) as info:
            prog(T)
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]


# -- a tensor hook that returns a gradient its node cannot take ---------------------------------


def _drop_one(g):
    return g[:2]


class _CallableHook:
    def __call__(self, g):
        return g[:1]


_BAD_HOOKS = {
    "a smaller gradient (named function)": (_drop_one, False, None),
    "a smaller gradient on a leaf": (lambda g: g[:1], True, None),
    "another shape of the same size": (lambda g: g.view(3, 1), False, None),
    "float32 to float64": (lambda g: g.double(), False, None),
    "float64 to float32": (lambda g: g.float(), False, "float64"),
    "another dtype and size (the type is named first)": (lambda g: g.double()[:2], False, None),
    "a callable object (no __name__)": (_CallableHook(), False, None),
    "not a tensor": (lambda g: 5, False, None),
}


def _assert_same_error(run) -> None:
    """run(torch) and run(gradviz) raise the same type with the same message (legacy type names
    spelled as torch's: torch.FloatTensor)."""
    want = _raise(run, torch)
    got = _raise(run, gradviz)
    assert type(got) is type(want)
    assert str(got) == str(want)


@pytest.mark.parametrize("case", sorted(_BAD_HOOKS))
def test_a_hook_that_changes_its_gradients_type_or_size_is_refused_as_torch(case):
    hook, on_leaf, dtype = _BAD_HOOKS[case]

    def run(T):
        x = T.ones(3, requires_grad=True) if dtype is None else T.ones(3, dtype=getattr(T, dtype), requires_grad=True)
        y = x * 2
        (x if on_leaf else y).register_hook(hook)
        y.sum().backward()

    _assert_same_error(run)


def test_a_hook_returning_a_same_size_same_dtype_gradient_replaces_it():
    x = gradviz.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


_BAD_NODE_HOOKS = {
    "pre-hook: a smaller gradient": ("pre", lambda g: (g[0][:2],)),
    "pre-hook: too many values": ("pre", lambda g: (g[0], g[0])),
    "pre-hook: a tensor, not a tuple": ("pre", lambda g: g[0]),
    "pre-hook: a list, not a tuple": ("pre", lambda g: [g[0] * 2]),
    "pre-hook: another dtype": ("pre", lambda g: (g[0].double(),)),
    "pre-hook: not a tensor inside": ("pre", lambda g: (5,)),
    "post-hook: a smaller gradient": ("post", lambda gi, go: (gi[0][:2], None)),
    "post-hook: too few values": ("post", lambda gi, go: (gi[0],)),
    "post-hook: a value for an undefined gradient": ("post", lambda gi, go: (gi[0], gi[0].sum())),
}


@pytest.mark.parametrize("case", sorted(_BAD_NODE_HOOKS))
def test_a_node_hook_with_results_its_node_cannot_take_is_refused_as_torch(case):
    kind, hook = _BAD_NODE_HOOKS[case]

    def run(T):
        x = T.ones(3, requires_grad=True)
        z = (x * 2) * 3  # the second MulBackward0's other is a number: its gradient is undefined
        (z.grad_fn.register_prehook if kind == "pre" else z.grad_fn.register_hook)(hook)
        z.sum().backward()

    _assert_same_error(run)


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_node_hooks_may_return_none_values_and_fitting_tensors(kind):
    def run(T):
        x = T.ones(3, requires_grad=True)
        z = (x * 2) * 3
        if kind == "pre":
            z.grad_fn.register_prehook(lambda g: (g[0] * 10,))
        else:
            z.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, None))
        z.sum().backward()
        return x.grad.tolist()

    assert run(gradviz) == run(torch)


# -- a Python number operand is saved as torch saves it: a tensor the backward frees ------------

_NUMBER_OPERANDS = {
    "x * 2.0": lambda T, x: x * 2.0,
    "2.0 * x": lambda T, x: 2.0 * x,
    "x / 2.0": lambda T, x: x / 2.0,
    "x * 3 (an int)": lambda T, x: x * 3,
    "x + 2.0 (saves no tensor)": lambda T, x: x + 2.0,
    "x - 2.0 (saves no tensor)": lambda T, x: x - 2.0,
    "-x (saves nothing)": lambda T, x: -x,
    "x * tensor(2.0)": lambda T, x: x * T.tensor(2.0),
}


@pytest.mark.parametrize("case", sorted(_NUMBER_OPERANDS))
def test_a_second_backward_through_a_number_operand_is_refused_as_torch(case):
    """torch wraps x * 2.0's 2.0 in a tensor, saves it, and frees it in the backward: a second
    backward then fails as for any freed saved tensor. An add saves none, so it may go again."""
    make = _NUMBER_OPERANDS[case]

    def run(T):
        x = T.ones(2, requires_grad=True)
        y = make(T, x)
        saved = getattr(y.grad_fn, "_saved_other", None)
        saved = None if saved is None else (saved.item(), str(saved.dtype).split(".")[-1])
        s = y.sum()
        s.backward()
        try:
            s.backward()
        except RuntimeError as e:
            return saved, str(e), x.grad.tolist()
        return saved, None, x.grad.tolist()

    assert run(gradviz) == run(torch)


def test_retain_graph_keeps_a_number_operand_for_the_next_backward():
    x = gradviz.ones(2, requires_grad=True)
    s = (x * 2.0).sum()
    s.backward(retain_graph=True)
    s.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = s.grad_fn.next_functions[0][0]._saved_other
