"""In-place view ops (unsqueeze_, squeeze_, t_, transpose_) and the deprecated
``add_(Number alpha, Tensor other)`` overloads against torch 2.13: values, shapes, versions,
graphs (torch's UnsqueezeBackward1 / SqueezeBackward3-5 / TBackward1 / TransposeBackward1),
gradients and errors."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch
from _surface import G, same, same_error, x64

import gradviz
from gradviz.ops import inplace_views


def _mul1(T, *shape):
    """A non-leaf float64 tensor (in-place ops on a leaf that requires grad are refused) and its leaf."""
    x = x64(T, *shape)
    return x * 1, x


def _after(op):
    """op applied in place to a non-leaf; the result, the same object, its version and shape."""

    def case(T):
        y, x = _mul1(T, 2, 1, 3)
        out = op(y)
        return G([out * 2, out is y, int(y._version), tuple(y.shape)], (x,))

    return case


def _on_view(T):
    # a view: its own history moves on, the base keeps its own (no CopySlices)
    y, x = _mul1(T, 2, 3)
    v = y.view(-1)
    return G([v.unsqueeze_(1) * 3, y * 1, v._base is y], (x,))


def _on_select(T):
    y, x = _mul1(T, 2, 3)
    v = y[0]
    return G([v.unsqueeze_(0) + y, y.grad_fn.name()], (x,))


def _view_then_write(T):
    # the view's storage is still the base's: a later in-place write through it reaches the base
    y, x = _mul1(T, 2, 3)
    v = y[1]
    v.unsqueeze_(0)
    v.mul_(2)
    return G([y, v], (x,))


def _no_grad_leaf(T):
    # a leaf that requires grad may change shape in place where nothing is recorded
    x = x64(T, 2)
    with T.no_grad():
        x.unsqueeze_(0)
    return [x, x.is_leaf, x.grad_fn is None, x.shape]


def _no_grad_view_then_grad(T):
    y = x64(T, 2) * 1
    with T.no_grad():
        v = y.view(-1)
    v.unsqueeze_(0)


CASES = {
    "unsqueeze_": _after(lambda y: y.unsqueeze_(0)),
    "unsqueeze_negative": _after(lambda y: y.unsqueeze_(-1)),
    "squeeze_all": _after(lambda y: y.squeeze_()),
    "squeeze_dim": _after(lambda y: y.squeeze_(1)),
    "squeeze_dim_not_one": _after(lambda y: y.squeeze_(0)),
    "squeeze_dims": _after(lambda y: y.squeeze_((0, 1))),
    "t_": _after(lambda y: y.squeeze_(1).t_()),
    "transpose_": _after(lambda y: y.transpose_(0, 2)),
    "swapdims_": _after(lambda y: y.swapdims_(0, -1)),
    "chain": _after(lambda y: y.unsqueeze_(0).transpose_(0, 3).squeeze_(2)),
    "on_view": _on_view,
    "on_select": _on_select,
    "view_then_write": _view_then_write,
    "int_target": lambda T: (lambda t: [t.unsqueeze_(-1), int(t._version), t[1]])(T.tensor([3, 1, 4])),
    "zero_dim_squeeze": lambda T: (lambda t: [t.squeeze_(0), t.squeeze_(-1), int(t._version)])(T.tensor(2.5)),
    "no_grad_leaf": _no_grad_leaf,
    "deprecated_add_": lambda T: (lambda y, x: G(y.add_(-0.5, x), (x,)))(*_mul1(T, 2, 3)),
    "deprecated_sub_": lambda T: (lambda y, x: G(y.sub_(2, x), (x,)))(*_mul1(T, 2, 3)),
    "deprecated_add": lambda T: (lambda x: G(x.add(3, x * x), (x,)))(x64(T, 2, 3)),
    "deprecated_data_update": lambda T: (lambda p: (p.data.add_(-0.1, T.ones(3)), p)[1])(x64(T, 3)),
    "add_alpha_keyword": lambda T: (lambda y, x: G(y.add_(x, alpha=2), (x,)))(*_mul1(T, 2, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_as_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(CASES[name])


def test_node_names():
    x = gradviz.randn(2, 1, 3, requires_grad=True)
    names = {}
    for key, op in {
        "unsqueeze_": lambda y: y.unsqueeze_(0), "squeeze_()": lambda y: y.squeeze_(),
        "squeeze_(dim)": lambda y: y.squeeze_(1), "squeeze_(dims)": lambda y: y.squeeze_((1,)),
        "t_": lambda y: y.squeeze_(1).t_(), "transpose_": lambda y: y.transpose_(0, 1),
    }.items():
        names[key] = op(x * 1).grad_fn.name()
    assert names == {
        "unsqueeze_": "UnsqueezeBackward1", "squeeze_()": "SqueezeBackward3", "squeeze_(dim)": "SqueezeBackward4",
        "squeeze_(dims)": "SqueezeBackward5", "t_": "TBackward1", "transpose_": "TransposeBackward1",
    }


ERRORS = {
    "leaf": lambda T: x64(T, 2).unsqueeze_(0),
    "view_of_leaf": lambda T: x64(T, 2, 3)[0].unsqueeze_(0),
    "t_3d": lambda T: (x64(T, 2, 2, 2) * 1).t_(),
    "unsqueeze_out_of_range": lambda T: T.zeros(2, 3).unsqueeze_(3),
    "squeeze_out_of_range": lambda T: T.zeros(2, 3).squeeze_(2),
    "squeeze_zero_dim_out_of_range": lambda T: T.tensor(1.0).squeeze_(1),
    "transpose_out_of_range": lambda T: T.zeros(2, 3).transpose_(0, 2),
    "squeeze_dims_repeated": lambda T: T.zeros(1, 3).squeeze_((0, 0)),
    "no_grad_view_then_grad": _no_grad_view_then_grad,
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_same_error_as_torch(name):
    same_error(ERRORS[name])


def test_backward_through_in_place_views():
    """The gradient reaches the leaf through each node's formula (not just the right names)."""
    for T in (torch, gradviz):
        x = T.arange(6.0, dtype=T.float64).reshape(2, 1, 3).requires_grad_()
        y = x * 1
        y.squeeze_(1).t_().unsqueeze_(0).transpose_(0, 2).squeeze_((1, 2))
        w = T.arange(1.0, 7.0, dtype=T.float64).reshape(y.shape)
        (y * w).sum().backward()
        if T is torch:
            ref = x.grad.numpy().copy()
        else:
            assert (x.grad.numpy() == ref).all()


def test_deprecated_warning_once_and_as_torch():
    """torch warns once per process (its argument parser's TORCH_WARN_ONCE), naming the first
    deprecated overload used; the text is torch's, less where in its C++ it was raised."""
    probe = (
        "import warnings, torch\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    t = torch.zeros(2); t.add_(2, torch.ones(2)); t.sub_(1, torch.ones(2)); t.add(1, t)\n"
        "print(len(w)); print(repr(str(w[0].message)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")
    count, message = int(out[0]), eval(out[1])  # noqa: S307 - repr of a str printed by the probe above
    inplace_views._deprecated_warned = False
    try:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            t = gradviz.zeros(2)
            t.add_(2, gradviz.ones(2))
            t.sub_(1, gradviz.ones(2))
            t.add(1, t)
    finally:
        inplace_views._deprecated_warned = True
    assert len(got) == count == 1
    assert got[0].category is UserWarning
    assert str(got[0].message) == message.split(" (Triggered internally at")[0]
