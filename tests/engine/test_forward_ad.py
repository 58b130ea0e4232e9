"""torch.autograd.forward_ad on gradviz against torch 2.13: the same program runs on both from the
same numbers; primals, tangents (values and None-ness), dual tensors' flags and errors compare."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import gradviz
import gradviz.autograd.forward_ad as gfw

FW = {torch: tfw, gradviz: gfw}


def _dual_run(m: Any, f: Callable, xs: list, ts: list) -> list:
    """f's outputs on dual inputs: (primal, tangent or None) as arrays."""
    fw = FW[m]
    with fw.dual_level():
        duals = [fw.make_dual(m.tensor(x), m.tensor(t)) for x, t in zip(xs, ts)]
        out = f(m, *duals)
        outs = out if isinstance(out, (tuple, list)) else [out]
        res = []
        for o in outs:
            p, t = fw.unpack_dual(o)
            res.append((p.detach().numpy().copy(), None if t is None else t.detach().numpy().copy()))
    return res


def _same_tangents(f: Callable, *shapes: tuple, seed: int = 0) -> None:
    r = np.random.default_rng(seed)
    xs = [r.standard_normal(s) for s in shapes]
    ts = [r.standard_normal(s) for s in shapes]
    want, got = _dual_run(torch, f, xs, ts), _dual_run(gradviz, f, xs, ts)
    assert len(want) == len(got)
    for (pw, tw), (pg, tg) in zip(want, got):
        np.testing.assert_allclose(pg, pw, rtol=1e-6, atol=1e-9)
        assert (tw is None) == (tg is None)
        if tw is not None:
            np.testing.assert_allclose(tg, tw, rtol=1e-6, atol=1e-9)


def _nnf(m: Any) -> Any:
    return m.nn.functional


# One program per family of the derivative table's forward column (the marker or formula each
# row uses): elementwise, reductions, views, shape and indexing, products, nn ops.
PROGRAMS: dict[str, tuple[Callable, tuple]] = {
    "arith": (lambda m, x, y: (x * y + x / (y.abs() + 1) - 2 * x) ** 2 - y.pow(3) + 1.5 ** x, ((3, 4), (4,))),
    "pointwise": (lambda m, x: (x.exp().sin() + x.tanh() + x.sigmoid() + x.relu() + x.clamp(-0.5, 0.5), x.atan(),
                                m.erf(x), x.abs().sqrt(), x.abs().log1p(), m.where(x > 0, x, x * 2)), ((5,),)),
    "binary": (lambda m, x, y: (m.maximum(x, y), m.atan2(x, y), m.hypot(x, y), m.lerp(x, y, 0.3),
                                m.addcmul(x, y, y, value=0.5), m.xlogy(x.abs(), y.abs())), ((3, 4), (3, 4))),
    "reductions": (lambda m, x: (x.sum(), x.sum(1), x.mean(0, keepdim=True), x.amax(1), x.max(), x.max(1)[0],
                                 x.min(0).values, x.var(1), x.std(), x.norm(), x.logsumexp(1), x.prod(1),
                                 x.cumsum(0), x.cumprod(1)), ((3, 4),)),
    "views": (lambda m, x: (x.view(12), x.t(), x.transpose(0, 1), x.permute(1, 0), x.unsqueeze(1), x[1],
                            x[:, 1:3], x[[0, 2]], x.expand(2, 3, 4), x.reshape(4, 3), x.diagonal(), x.squeeze()),
              ((3, 4),)),
    "shape": (lambda m, x, y: (m.cat([x, y]), m.stack([x, y], 1), *x.split(3, 1), *x.unbind(0), x.flip(0),
                               x.roll(1, 0), x.tril(), x.repeat(2, 1), x.sort(1)[0], x.topk(2, 1)[0]),
              ((3, 4), (3, 4))),
    "indexing": (lambda m, x, y: (x.gather(1, m.tensor([[0, 1], [2, 3], [1, 1]])),
                                  x.index_select(1, m.tensor([0, 3])), x.masked_fill(x > 0, 1.0),
                                  x.scatter(1, m.tensor([[0], [1], [2]]), y[:, :1])),
                 ((3, 4), (3, 4))),
    "products": (lambda m, a, b: (a @ b, m.mm(a, b), m.addmm(b[0], a, b, beta=0.5, alpha=2.0), m.mv(a, b[0]),
                                  m.dot(b[0], b[1]), m.bmm(a.unsqueeze(0), b.unsqueeze(0)),
                                  m.einsum("ij,jk->ik", a, b)), ((3, 4), (4, 4))),
    "linear": (lambda m, x, w, b: _nnf(m).linear(x, w, b), ((5, 3), (4, 3), (4,))),
    "activations": (lambda m, x: (_nnf(m).gelu(x), _nnf(m).silu(x), _nnf(m).elu(x), _nnf(m).leaky_relu(x, 0.1),
                                  _nnf(m).softplus(x), _nnf(m).hardtanh(x), _nnf(m).mish(x), _nnf(m).logsigmoid(x),
                                  _nnf(m).glu(x, 1), x.softmax(1), x.log_softmax(1)), ((3, 4),)),
    "losses": (lambda m, x, y: (_nnf(m).mse_loss(x, y), _nnf(m).l1_loss(x, y), _nnf(m).smooth_l1_loss(x, y),
                                _nnf(m).binary_cross_entropy_with_logits(x, y.sigmoid()),
                                _nnf(m).cross_entropy(x, m.tensor([0, 3, 1])),
                                _nnf(m).mse_loss(x, y, reduction="none")),
               ((3, 4), (3, 4))),
    "conv": (lambda m, x, w, b: (_nnf(m).conv2d(x, w, b, padding=1), _nnf(m).max_pool2d(x, 2),
                                 _nnf(m).avg_pool2d(x, 2), _nnf(m).adaptive_avg_pool2d(x, 1)),
             ((2, 3, 4, 4), (5, 3, 3, 3), (5,))),
    "norms": (lambda m, x, w, b: (_nnf(m).layer_norm(x, (4,), w, b),
                                  _nnf(m).batch_norm(x, None, None, w, b, training=True),
                                  _nnf(m).group_norm(x.unsqueeze(-1), 2)), ((3, 4), (4,), (4,))),
    "embedding_pad": (lambda m, w: (_nnf(m).embedding(m.tensor([[0, 2], [1, 1]]), w), _nnf(m).pad(w, (1, 2))),
                      ((4, 3),)),
    "linalg": (lambda m, a: (m.linalg.inv(a @ a.t() + m.eye(3)), m.linalg.det(a),
                             m.linalg.cholesky(a @ a.t() + m.eye(3))), ((3, 3),)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tangents_match_torch(name: str) -> None:
    f, shapes = PROGRAMS[name]
    _same_tangents(f, *shapes)


def _inplace_program(m: Any) -> list:
    """In-place ops on dual tensors, on their views, and dual values written into plain tensors."""
    fw = FW[m]
    r = np.random.default_rng(1)
    x, t = m.tensor(r.standard_normal(4)), m.tensor(r.standard_normal(4))
    y, u = m.tensor(r.standard_normal(2)), m.tensor(r.standard_normal(2))
    out = []
    with fw.dual_level():
        d = fw.make_dual(x.clone(), t.clone())
        v = d[:2]
        d.mul_(3)  # the view's tangent follows its base's
        out.append(fw.unpack_dual(v).tangent.clone())
        v.add_(fw.make_dual(y, u))  # and the base's follows the view's
        out.append(fw.unpack_dual(d).tangent.clone())
        b = m.zeros(4, dtype=m.float64)
        b.add_(fw.make_dual(x, t))  # a plain tensor becomes dual
        out.append(fw.unpack_dual(b).tangent.clone())
        c = m.zeros(4, dtype=m.float64)
        c[1:3].copy_(fw.make_dual(y, u))  # through a view: the base gets the tangent, zeros elsewhere
        c[0] = fw.make_dual(y, u)[1]
        out.append(fw.unpack_dual(c).tangent.clone())
        e = fw.make_dual(x.clone(), t.clone())
        e.exp_()
        e.clamp_(-0.5, 2.0)
        out.append(fw.unpack_dual(e).tangent.clone())
        g = fw.make_dual(x.clone().view(2, 2), t.clone().view(2, 2))
        gt = g.t()
        gt.mul_(gt)
        out.append(fw.unpack_dual(g).tangent.clone())
        h = fw.make_dual(x.clone(), t.clone())
        h.zero_()
        out.append(fw.unpack_dual(h).tangent.clone())
    return [o.numpy() for o in out]


def test_inplace_and_views_match_torch() -> None:
    for want, got in zip(_inplace_program(torch), _inplace_program(gradviz), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def _api_program(m: Any) -> dict:
    """What make_dual and unpack_dual give back, and what leaving the level does."""
    fw = FW[m]
    x, t = m.randn(3), m.randn(3)
    p = m.randn(3, requires_grad=True)
    res: dict[str, Any] = {}
    res["outside"] = fw.unpack_dual(x).tangent is None
    with fw.dual_level() as level:
        res["level"] = level
        d = fw.make_dual(x, t)
        u = fw.unpack_dual(d)
        res["is_namedtuple"] = (type(u).__name__, u._fields)
        res["tangent_is_given"] = u.tangent is t
        res["primal_is_view"] = (u.primal is x, d._base is x)
        res["dual_flags"] = (d.requires_grad, d.grad_fn is None, d.is_leaf)
        res["plain"] = fw.unpack_dual(x).tangent is None
        res["detach_drops"] = fw.unpack_dual(d.detach()).tangent is None
        y = d * 2
        res["op_flags"] = (y.requires_grad, y.grad_fn is None, y[1:].requires_grad, u.primal.requires_grad)
        dp = fw.make_dual(p, t)
        res["param_dual"] = (dp.requires_grad, type(dp.grad_fn).__name__, dp._base is p)
        res["transposed_tangent"] = fw.unpack_dual(fw.make_dual(x, t.view(1, 3).t().reshape(3))).tangent is not None
    res["after"] = (fw.unpack_dual(d).tangent is None, fw.unpack_dual(y).tangent is None, y.requires_grad)
    return res


def test_api_matches_torch() -> None:
    assert _api_program(gradviz) == _api_program(torch)


def _error(program: Callable[[Any], Any], m: Any) -> tuple[str, str]:
    try:
        program(m)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return type(e).__name__, str(e)
    return "", ""


def _make_dual_no_level(m: Any) -> Any:
    return FW[m].make_dual(m.randn(3), m.randn(3))


def _in_level(body: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        with FW[m].dual_level():
            return body(m, FW[m])
    return program


ERRORS: dict[str, Callable[[Any], Any]] = {
    "no_level": _make_dual_no_level,
    "nested": _in_level(lambda m, fw: fw.enter_dual_level()),
    "shape": _in_level(lambda m, fw: fw.make_dual(m.randn(3), m.randn(4))),
    "int_primal": _in_level(lambda m, fw: fw.make_dual(m.arange(3), m.arange(3))),
    "int_tangent": _in_level(lambda m, fw: fw.make_dual(m.randn(3), m.arange(3))),
    "bad_level": _in_level(lambda m, fw: fw.make_dual(m.randn(3), m.randn(3), level=5)),
    "dual_of_dual": _in_level(lambda m, fw: fw.make_dual(fw.make_dual(m.randn(3), m.randn(3)), m.randn(3))),
    "exit_other": _in_level(lambda m, fw: fw.exit_dual_level(level=3)),
    "exit_none": lambda m: FW[m].exit_dual_level(),
    "unpack_not_tensor": _in_level(lambda m, fw: fw.unpack_dual(3)),
    "backward_of_dual": _in_level(lambda m, fw: (fw.make_dual(m.randn(3), m.randn(3)) * 2).sum().backward()),
    # ops torch has no forward formula for: the same NotImplementedError, naming the op
    "grid_sampler": _in_level(lambda m, fw: m.nn.functional.grid_sample(
        fw.make_dual(m.randn(1, 1, 4, 4), m.randn(1, 1, 4, 4)), m.zeros(1, 2, 2, 2), align_corners=False)),
    "sdpa": _in_level(lambda m, fw: m.nn.functional.scaled_dot_product_attention(
        *(fw.make_dual(m.randn(1, 2, 3, 4), m.randn(1, 2, 3, 4)) for _ in range(3)))),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    want = _error(ERRORS[name], torch)
    assert want[0], "torch raised nothing"
    assert _error(ERRORS[name], gradviz) == want


def _custom_function_program(m: Any) -> list:
    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, k: float) -> Any:
            result = m.exp(x) * k
            ctx.save_for_forward(result)
            return result

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g, None

        @staticmethod
        def jvp(ctx: Any, t: Any, tk: Any) -> Any:
            assert tk is None
            (result,) = ctx.saved_tensors
            return t * result

    class NoJvp(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    fw = FW[m]
    r = np.random.default_rng(2)
    x, t = m.tensor(r.standard_normal(3)), m.tensor(r.standard_normal(3))
    with fw.dual_level():
        out = fw.unpack_dual(Exp.apply(fw.make_dual(x, t), 3.0)).tangent.numpy().copy()
        err = _error(lambda _m: NoJvp.apply(fw.make_dual(x, t)), m)
    ok = m.autograd.gradcheck(lambda a: Exp.apply(a, 2.0), (x.clone().requires_grad_(),), check_forward_ad=True,
                              check_backward_ad=False, check_undefined_grad=False, check_batched_grad=False)
    return [out, err, ok]


def test_custom_function_jvp_matches_torch() -> None:
    want, got = _custom_function_program(torch), _custom_function_program(gradviz)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1:] == want[1:]


def test_dual_tensor_prints_its_tangent() -> None:
    def program(m: Any) -> str:
        with FW[m].dual_level():
            return repr(FW[m].make_dual(m.tensor([1.0, 2.0]), m.tensor([0.5, -1.0])))
    assert program(gradviz) == program(torch)


def _tensor_methods_program(m: Any) -> list:
    """What a dual tensor whose primal needs no gradient allows, as torch's (no reverse-mode use)."""
    fw = FW[m]
    out: list = []
    with fw.dual_level():
        d = fw.make_dual(m.tensor([1.5, -2.0]), m.tensor([1.0, 1.0]))
        out.append(d.numpy().tolist())
        out.append(float(d[0]))
        out.append(_error(lambda _m: d.retain_grad(), m))
        out.append(_error(lambda _m: d.register_hook(lambda g: g), m))
    return out


def test_dual_tensor_methods_match_torch() -> None:
    assert _tensor_methods_program(gradviz) == _tensor_methods_program(torch)


def _gradcheck_program(m: Any) -> list:
    """gradgradcheck's forward over reverse, and gradcheck's verdict on a wrong jvp."""
    r = np.random.default_rng(4)
    x = m.tensor(r.standard_normal(3), requires_grad=True)
    w = m.tensor(r.standard_normal((3, 3)), requires_grad=True)
    g = m.ones(3, dtype=m.float64, requires_grad=True)

    def f(a: Any, b: Any) -> Any:
        return (m.tanh(b @ a) * a.sin()).softmax(0)

    class WrongJvp(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            return a.exp()

        @staticmethod
        def backward(ctx: Any, go: Any) -> Any:
            return go

        @staticmethod
        def jvp(ctx: Any, t: Any) -> Any:
            return t

    ok = m.autograd.gradgradcheck(f, (x, w), (g,), check_fwd_over_rev=True)
    err = _error(lambda _m: m.autograd.gradcheck(WrongJvp.apply, (x,), check_forward_ad=True,
                                                   check_backward_ad=False), m)
    return [ok, err[0], err[1].splitlines()[0]]


def test_gradcheck_forward_modes_match_torch() -> None:
    assert _gradcheck_program(gradviz) == _gradcheck_program(torch)


def _grad_modes_program(m: Any) -> list:
    """Forward AD ignores grad mode (no_grad, set_grad_enabled(False)), not inference mode; the
    tangents, and the outputs' flags and histories, under each."""
    fw = FW[m]
    r = np.random.default_rng(5)
    x, t = r.standard_normal(3), r.standard_normal(3)
    res: list = []
    with fw.dual_level():
        p = m.tensor(x, requires_grad=True)
        for d in (fw.make_dual(m.tensor(x), m.tensor(t)), fw.make_dual(p, m.tensor(t))):
            with m.no_grad():
                y = (d.sin() * d)[1:].exp()
                v = d[:2]
            with m.set_grad_enabled(False):
                z = d @ d
            with m.inference_mode():
                w = d * 2
            d2 = d.clone()
            with m.no_grad():
                d2.mul_(3)  # in place: the tangent changes, the history does not
            for o in (y, v, z, w, d2):
                tan = fw.unpack_dual(o).tangent
                res.append((o.requires_grad, o.grad_fn is None,
                            None if tan is None else tan.detach().numpy().round(10).tolist()))
            res.append(type(d2.grad_fn).__name__ if d2.grad_fn is not None else None)
    return res


def test_no_grad_inside_a_dual_level_keeps_tangents_as_torch() -> None:
    assert _grad_modes_program(gradviz) == _grad_modes_program(torch)


def _requires_grad_program(m: Any) -> list:
    """A dual tensor's requires_grad is its primal's, whoever asks (a module's code or the user's),
    and so are its outputs'; numpy() and hooks follow it."""
    fw = FW[m]
    with fw.dual_level():
        d = fw.make_dual(m.ones(3), m.ones(3))
        p = fw.make_dual(m.ones(3, requires_grad=True), m.ones(3))
        lin = m.nn.Linear(3, 2).double()
        out = lin(d.double())
        flags = [d.requires_grad, (d * 2).requires_grad, d[0].requires_grad, p.requires_grad,
                 (p * 2).requires_grad, out.requires_grad, d.is_leaf, m.is_grad_enabled()]
        with m.no_grad():
            flags.append(m.is_grad_enabled())
        flags.append(d.numpy().tolist())

        class Seen(m.autograd.Function):  # gradviz's own code asks here, as torch's does
            @staticmethod
            def forward(ctx: Any, a: Any, b: Any) -> Any:
                flags.append(ctx.needs_input_grad)
                return a * b

            @staticmethod
            def jvp(ctx: Any, ta: Any, tb: Any) -> Any:
                return ta + tb

        flags.append(Seen.apply(d, p).requires_grad)
    return flags


def test_requires_grad_of_a_dual_tensor_is_its_primals() -> None:
    assert _requires_grad_program(gradviz) == _requires_grad_program(torch)


def _packs_program(m: Any) -> list:
    """Ops under no_grad inside a dual level save nothing for a backward: pack hooks do not run."""
    fw = FW[m]
    packed: list = []
    p = m.ones(3, requires_grad=True)
    with fw.dual_level():
        d = fw.make_dual(m.ones(3), m.ones(3))
        with m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            with m.no_grad():
                y = p.sin() * p
                z = (d.sin() * p).exp()
            w = p.sin()
        tan = fw.unpack_dual(z).tangent.numpy().round(5).tolist()
    return [len(packed), y.requires_grad, z.requires_grad, w.requires_grad, tan]


def test_no_grad_inside_a_dual_level_packs_nothing_as_torch() -> None:
    assert _packs_program(gradviz) == _packs_program(torch)


@pytest.mark.parametrize("name,args", [("tril_", ()), ("cumsum_", (0,)), ("tan_", ())])
def test_tangent_through_inplace_variants_matches_torch(name, args):
    # in-place forms built from their out-of-place op (gradviz/ops/inplace_variants.py) carry
    # the tangent into the tensor written, as torch's in-place forward AD does
    def run(mod):
        x = mod.tensor([[0.3, 0.5], [0.1, 0.9]], dtype=mod.float64)
        t = mod.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=mod.float64)
        with mod.autograd.forward_ad.dual_level():
            d = mod.autograd.forward_ad.make_dual(x.clone(), t)
            getattr(d, name)(*args)
            return mod.autograd.forward_ad.unpack_dual(d).tangent.numpy().copy()

    np.testing.assert_allclose(run(gradviz), run(torch), rtol=1e-12)


def _primal_backward(m: Any, dual_input: bool, shape: tuple) -> tuple:
    """unpack_dual's primal inside a level, then backward through it: its node's name, its edge,
    whether it is a view, and the leaf's gradient."""
    fw = FW[m]
    r = np.random.default_rng(1)
    w = m.tensor(r.standard_normal((shape[-1], 3)), requires_grad=True)
    x = m.tensor(r.standard_normal(shape))
    with fw.dual_level():
        if dual_input:
            x = fw.make_dual(x, m.tensor(r.standard_normal(shape)))
        o = m.tanh(x @ w).sum(0)
        p = fw.unpack_dual(o).primal
        name, nxt = p.grad_fn.name(), [type(f).__name__ for f, _ in p.grad_fn.next_functions]
        view = p._base is o
        (p * m.arange(3.0)).sum().backward()
    return name, nxt, view, w.grad.numpy().copy()


@pytest.mark.parametrize("dual_input", [True, False])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 2)])
def test_unpack_dual_primal_is_an_identity_view_as_torch(dual_input: bool, shape: tuple) -> None:
    # torch's _fw_primal: a view whose node is torch::autograd::Identity, dual or not
    want, got = _primal_backward(torch, dual_input, shape), _primal_backward(gradviz, dual_input, shape)
    assert got[:3] == want[:3]
    np.testing.assert_allclose(got[3], want[3], rtol=1e-6)
