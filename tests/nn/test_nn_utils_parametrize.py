"""torch.nn.utils.parametrize and parametrizations (weight_norm, spectral_norm), the old
weight_norm/spectral_norm hooks and stateless.functional_call, against torch 2.13: graphs,
order, values, gradients, buffers (the power method's vectors), state_dict keys, errors."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import gradviz
from tests._diff import Case, check, leaf
from tests._nn_diff import same_error


def _module_prog(make, x_shape, calls=1, train=True, extra=None):
    """make(T) builds (and parametrizes) a float64 module from the seeded generator; it runs
    ``calls`` forwards (power iterations move between them), the last one's output backpropagated."""

    def prog(T):
        m = make(T)
        m.train(train)
        x = leaf(T, *x_shape, seed=1)
        for _ in range(calls):
            out = m(x)
        if extra is not None:
            out = extra(T, m, out)
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        return Case(roots=[out], run=lambda: out.backward(g), grads_of=[x, *m.parameters()],
                    values=[*m.buffers(), *m.state_dict().values()], keep=m)

    return prog


def _pz(T):
    return T.nn.utils.parametrizations


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_linear(dim):
    check(_module_prog(lambda T: _pz(T).weight_norm(T.nn.Linear(3, 4).double(), dim=dim), (2, 3)))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_weight_norm_conv(dim):
    # dim 1 and 2 of a 4-d weight: torch builds it of norm_except_dim's views, not the fused node
    check(_module_prog(lambda T: _pz(T).weight_norm(T.nn.Conv2d(2, 3, 2).double(), dim=dim), (1, 2, 4, 4)))


@pytest.mark.parametrize("make", [
    lambda T: T.nn.Linear(3, 4).double(),
    lambda T: T.nn.Conv2d(2, 3, 2).double(),
    lambda T: T.nn.ConvTranspose2d(2, 3, 2).double(),
])
@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm(make, train):
    shape = (1, 2, 3, 3) if "Conv" in str(make(torch)) else (2, 3)
    check(_module_prog(lambda T: _pz(T).spectral_norm(make(T), n_power_iterations=2), shape, calls=2,
                       train=train))


def test_spectral_norm_of_a_vector_and_dim():
    check(_module_prog(lambda T: _pz(T).spectral_norm(T.nn.Linear(3, 4).double(), "bias"), (2, 3)))
    check(_module_prog(lambda T: _pz(T).spectral_norm(T.nn.Linear(3, 4).double(), dim=1), (2, 3)))


class _Symmetric:
    """A custom parametrization with a right inverse, made on either side's nn.Module."""

    @staticmethod
    def make(T):
        class Symmetric(T.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu()

        return Symmetric()


class _Scale:
    @staticmethod
    def make(T):
        class Scale(T.nn.Module):
            def forward(self, X):
                return X * 2.0

        return Scale()


def _symmetric_linear(T, chain=False):
    m = T.nn.Linear(3, 3).double()
    T.nn.utils.parametrize.register_parametrization(m, "weight", _Symmetric.make(T))
    if chain:
        T.nn.utils.parametrize.register_parametrization(m, "weight", _Scale.make(T))
    return m


@pytest.mark.parametrize("chain", [False, True])
def test_custom_parametrization(chain):
    check(_module_prog(lambda T: _symmetric_linear(T, chain), (2, 3)))


def test_cached_reads_once():
    def prog(T):
        m = _symmetric_linear(T)
        x = leaf(T, 2, 3, seed=1)
        with T.nn.utils.parametrize.cached():
            assert m.weight is m.weight
            out = m(x) + m(x)
        assert m.weight is not m.weight
        return Case(roots=[out], run=lambda: out.sum().backward(), grads_of=[x, *m.parameters()])

    check(prog)


def test_assign_through_right_inverse_and_remove():
    def prog(T):
        P = T.nn.utils.parametrize
        m = _symmetric_linear(T)
        with T.no_grad():
            m.weight = leaf(T, 3, 3, seed=5, requires_grad=False)
        before = [m.weight.detach().clone(), m.parametrizations.weight.original.detach().clone()]
        kept = _symmetric_linear(T)
        P.remove_parametrizations(kept, "weight", leave_parametrized=False)
        P.remove_parametrizations(m, "weight")
        assert type(m) is T.nn.Linear and not P.is_parametrized(m)
        assert sorted(m.state_dict()) == ["bias", "weight"]
        x = leaf(T, 2, 3, seed=1)
        out = m(x) + kept(x)
        return Case(roots=[out], run=lambda: out.sum().backward(),
                    grads_of=[x, *m.parameters(), *kept.parameters()], values=before)

    check(prog)


def test_introspection_and_transfer():
    for T in (torch, gradviz):
        P = T.nn.utils.parametrize
        m = _symmetric_linear(T)
        assert type(m).__name__ == "ParametrizedLinear"
        assert P.type_before_parametrizations(m) is T.nn.Linear
        assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
        assert isinstance(m.parametrizations.weight, P.ParametrizationList)
        assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
        assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
        other = T.nn.Linear(3, 3).double()
        P.transfer_parametrizations_and_params(m, other)
        assert other.parametrizations.weight.original is m.parametrizations.weight.original
        replica = copy.deepcopy(m)
        assert type(replica).__name__ == "ParametrizedLinear"
        assert replica.parametrizations.weight.original is not m.parametrizations.weight.original
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
            m.__getstate__()


def test_weight_norm_state_dict_and_old_keys_load():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for T in (torch, gradviz):
            m = _pz(T).weight_norm(T.nn.Linear(3, 4))
            assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                            "parametrizations.weight.original1"]
            old = T.nn.utils.weight_norm(T.nn.Linear(3, 4))
            assert sorted(old.state_dict()) == ["bias", "weight_g", "weight_v"]
            m.load_state_dict(old.state_dict())
            assert (m.parametrizations.weight.original1 == old.weight_v).all()


def test_parametrize_errors():

    def reg(T, what, name="weight", **kw):
        return T.nn.utils.parametrize.register_parametrization(T.nn.Linear(3, 4), name, what(T), **kw)

    def bad_shape(T):
        class Cut(T.nn.Module):
            def forward(self, X):
                return X[0]

        return Cut()

    same_error(lambda T: reg(T, bad_shape))
    same_error(lambda T: reg(T, _Scale.make, name="nothing"))
    same_error(lambda T: T.nn.utils.parametrize.remove_parametrizations(T.nn.Linear(3, 4), "weight"))
    same_error(lambda T: T.nn.utils.parametrize.ParametrizationList([], T.zeros(2)))
    same_error(lambda T: _pz(T).spectral_norm(T.nn.Linear(3, 4), n_power_iterations=0))
    same_error(lambda T: _pz(T).spectral_norm(T.nn.Linear(3, 4), dim=2))
    same_error(lambda T: _pz(T).spectral_norm(T.nn.Linear(3, 4), "nothing"))


@pytest.mark.parametrize("dim", [0, None])
def test_old_weight_norm_hook(dim):
    def make(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return T.nn.utils.weight_norm(T.nn.Linear(3, 4).double(), dim=dim)

    check(_module_prog(make, (2, 3), calls=2))

    def removed(T):
        m = make(T)
        return T.nn.utils.remove_weight_norm(m)

    check(_module_prog(removed, (2, 3)))


def test_old_weight_norm_warns_and_errors():
    for T in (torch, gradviz):
        with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
            m = T.nn.utils.weight_norm(T.nn.Linear(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        same_error(lambda T: T.nn.utils.weight_norm(T.nn.utils.weight_norm(T.nn.Linear(3, 4))))
        same_error(lambda T: T.nn.utils.remove_weight_norm(T.nn.Linear(3, 4)))
    assert m is not None


@pytest.mark.parametrize("train", [True, False])
def test_old_spectral_norm_hook(train):
    check(_module_prog(lambda T: T.nn.utils.spectral_norm(T.nn.Conv2d(2, 3, 2).double(), n_power_iterations=2),
                       (1, 2, 3, 3), calls=2, train=train))
    check(_module_prog(lambda T: T.nn.utils.remove_spectral_norm(T.nn.utils.spectral_norm(T.nn.Linear(3, 4).double())),
                       (2, 3)))


def test_old_spectral_norm_state_dict():
    for T in (torch, gradviz):
        m = T.nn.utils.spectral_norm(T.nn.Linear(3, 4))
        assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
        assert m.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
        m.load_state_dict(m.state_dict())
        T.nn.utils.remove_spectral_norm(m)
        assert not m._state_dict_hooks and len(m._load_state_dict_pre_hooks) == 1

    def removed_then_loaded(T):
        m = T.nn.utils.remove_spectral_norm(T.nn.utils.spectral_norm(T.nn.Linear(3, 4)))
        m.load_state_dict(m.state_dict())

    same_error(removed_then_loaded)
    same_error(lambda T: T.nn.utils.remove_spectral_norm(T.nn.Linear(3, 4)))
    same_error(lambda T: T.nn.utils.spectral_norm(T.nn.utils.spectral_norm(T.nn.Linear(3, 4))))


def test_stateless_functional_call():
    def prog(T):
        m = T.nn.Linear(3, 2).double()
        w = leaf(T, 2, 3, seed=4)
        x = leaf(T, 4, 3, seed=1)
        with pytest.warns(FutureWarning, match="torch.func.functional_call"):
            out = T.nn.utils.stateless.functional_call(m, {"weight": w}, (x,))
        return Case(roots=[out], run=lambda: out.sum().backward(), grads_of=[x, w, m.bias, m.weight])

    check(prog)


def test_importable_as_torch_submodules():
    import gradviz.nn.utils.parametrizations as pz
    import gradviz.nn.utils.parametrize as p
    import gradviz.nn.utils.stateless as st
    from gradviz.nn.utils.parametrize import cached, register_parametrization  # noqa: F401

    assert p.register_parametrization and pz.orthogonal and st.functional_call


@pytest.mark.parametrize("shape", [(4, 4), (3, 4), (4, 3)])
@pytest.mark.parametrize("omap", [None, "matrix_exp", "cayley", "householder"])
def test_orthogonal(shape, omap):
    def make(T):
        m = T.nn.Linear(shape[1], shape[0]).double()
        return _pz(T).orthogonal(m, orthogonal_map=omap)

    check(_module_prog(make, (2, shape[1])))


@pytest.mark.parametrize("omap", ["householder", "matrix_exp"])
def test_orthogonal_assign_and_no_trivialization(omap):
    def prog(T):
        m = _pz(T).orthogonal(T.nn.Linear(3, 5).double(), orthogonal_map=omap)
        with T.no_grad():
            m.weight = leaf(T, 5, 3, seed=4, requires_grad=False)  # not orthogonal: QR'd into the base
        plain = _pz(T).orthogonal(T.nn.Linear(4, 4).double(), orthogonal_map="householder",
                                  use_trivialization=False)
        x = leaf(T, 2, 3, seed=1)
        out = T.cat([m(x), plain(leaf(T, 2, 4, seed=2))], 1)
        return Case(roots=[out], run=lambda: out.sum().backward(), grads_of=[x, *m.parameters(), *plain.parameters()],
                    values=[m.parametrizations.weight[0].base, m.weight.detach()])

    check(prog)


def test_orthogonal_errors():
    same_error(lambda T: _pz(T).orthogonal(T.nn.Linear(3, 4), "bias"))
    same_error(lambda T: _pz(T).orthogonal(T.nn.Linear(3, 4), orthogonal_map="qr"))
    same_error(lambda T: _pz(T).orthogonal(T.nn.Linear(3, 4), "nothing"))

    def assign_exp(T):
        m = _pz(T).orthogonal(T.nn.Linear(3, 3), use_trivialization=False)
        m.weight = T.eye(3)

    same_error(assign_exp)


def test_skip_init_leaves_the_generator_as_torch_does():
    def prog(T):
        m = T.nn.utils.skip_init(T.nn.Linear, 3, 2, dtype=T.float64)
        assert tuple(m.weight.shape) == (2, 3) and m.weight.dtype == T.float64
        after = T.rand(3)  # the same draw: skip_init took none
        return Case(roots=[after], values=[])

    check(prog)
    same_error(lambda T: T.nn.utils.skip_init(int))
    same_error(lambda T: T.nn.utils.skip_init(T.nn.ReLU))
