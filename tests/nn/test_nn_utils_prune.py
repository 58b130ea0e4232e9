"""torch.nn.utils.prune against torch 2.13: the masks each method computes (random ones from
the same draws), the reparametrization (``_orig``, ``_mask``, the MulBackward0 the forward goes
through), iterative pruning through PruningContainer, global pruning, remove, and errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 - torch.nn.utils does not import it itself

import gradviz
from tests._diff import Case, check, leaf
from tests._nn_diff import same_error


def _net(T):
    return T.nn.Sequential(T.nn.Conv2d(2, 4, 2), T.nn.ReLU(), T.nn.Flatten(), T.nn.Linear(4 * 2 * 2, 3)).double()


def _prog(prune, x_shape=(2, 2, 3, 3), calls=1):
    """prune(T, net) prunes a seeded net; compared: graph, order, output, gradients of the input
    and parameters (``weight_orig`` among them), masks, and state_dict."""

    def prog(T):
        net = _net(T)
        prune(T, net)
        x = leaf(T, *x_shape, seed=1)
        for _ in range(calls):
            out = net(x)
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        named = dict(net.named_parameters())
        sd = net.state_dict()
        assert sorted(named) == sorted(k for k in sd if not k.endswith("_mask"))
        return Case(roots=[out], run=lambda: out.backward(g), grads_of=list(named.values()),
                    values=[*net.buffers(), *sd.values(), T.tensor(float(T.nn.utils.prune.is_pruned(net)))],
                    keep=net)

    return prog


def _p(T):
    return T.nn.utils.prune


CASES = {
    "identity": lambda T, n: _p(T).identity(n[0], "weight"),
    "random_unstructured": lambda T, n: _p(T).random_unstructured(n[0], "weight", amount=0.3),
    "l1_unstructured": lambda T, n: _p(T).l1_unstructured(n[3], "weight", amount=5),
    "l1_bias": lambda T, n: _p(T).l1_unstructured(n[0], "bias", amount=0.5),
    "random_structured": lambda T, n: _p(T).random_structured(n[0], "weight", amount=0.5, dim=0),
    "ln_structured": lambda T, n: _p(T).ln_structured(n[0], "weight", amount=2, n=2, dim=0),
    "ln_structured_inf_last": lambda T, n: _p(T).ln_structured(n[0], "weight", amount=0.5, n=float("inf"), dim=-1),
    "ln_structured_l1_scores": lambda T, n: _p(T).ln_structured(
        n[0], "weight", amount=1, n=1, dim=1, importance_scores=leaf(T, 4, 2, 2, 2, seed=7, requires_grad=False)),
    "custom_from_mask": lambda T, n: _p(T).custom_from_mask(
        n[3], "bias", mask=T.tensor([1.0, 0.0, 1.0], dtype=T.float64)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_prune_method(name):
    check(_prog(lambda T, n: CASES[name](T, n), calls=2))


def test_iterative_pruning_container():
    def prune(T, n):
        _p(T).l1_unstructured(n[0], "weight", amount=0.25)
        _p(T).ln_structured(n[0], "weight", amount=1, n=2, dim=0)
        _p(T).random_unstructured(n[0], "weight", amount=3)
        _p(T).random_structured(n[0], "weight", amount=1, dim=1)
        hook = next(iter(n[0]._forward_pre_hooks.values()))
        assert isinstance(hook, _p(T).PruningContainer) and len(hook) == 4
        assert [type(m).__name__ for m in hook] == ["L1Unstructured", "LnStructured", "RandomUnstructured",
                                                    "RandomStructured"]

    check(_prog(prune))


def test_global_unstructured():
    def prune(T, n):
        params = [(n[0], "weight"), (n[3], "weight"), (n[3], "bias")]
        _p(T).global_unstructured(params, pruning_method=_p(T).L1Unstructured, amount=0.4)
        _p(T).global_unstructured(params, pruning_method=_p(T).RandomUnstructured, amount=5)

    check(_prog(prune))


def test_global_with_importance_scores():
    def prune(T, n):
        scores = {(n[3], "weight"): leaf(T, 3, 16, seed=3, requires_grad=False)}
        _p(T).global_unstructured([(n[0], "weight"), (n[3], "weight")], _p(T).L1Unstructured,
                                  importance_scores=scores, amount=10)

    check(_prog(prune))


def test_remove_makes_it_permanent():
    def prune(T, n):
        _p(T).l1_unstructured(n[0], "weight", amount=0.5)
        _p(T).random_structured(n[0], "weight", amount=1, dim=0)
        _p(T).l1_unstructured(n[3], "bias", amount=1)
        _p(T).remove(n[0], "weight")
        _p(T).remove(n[3], "bias")
        assert not _p(T).is_pruned(n)
        assert [k for k, _ in n.named_parameters()] == ["0.bias", "0.weight", "3.weight", "3.bias"]

    check(_prog(prune))


def test_prune_method_on_a_tensor():
    def prog(T):
        t = leaf(T, 3, 4, seed=2)
        out = _p(T).L1Unstructured(amount=0.5).prune(t) + _p(T).LnStructured(2, n=1, dim=1).prune(t)
        return Case(roots=[out], run=lambda: out.sum().backward(), grads_of=[t])

    check(prog)


def test_prune_errors():
    lin = lambda T: T.nn.Linear(3, 4)  # noqa: E731
    same_error(lambda T: _p(T).l1_unstructured(lin(T), "weight", amount=1.5))
    same_error(lambda T: _p(T).l1_unstructured(lin(T), "weight", amount=-1))
    same_error(lambda T: _p(T).l1_unstructured(lin(T), "weight", amount="a"))
    same_error(lambda T: _p(T).l1_unstructured(lin(T), "weight", amount=13))
    same_error(lambda T: _p(T).ln_structured(lin(T), "bias", amount=1, n=2, dim=0))
    same_error(lambda T: _p(T).random_structured(lin(T), "weight", amount=1, dim=2))
    same_error(lambda T: _p(T).remove(lin(T), "weight"))
    for T in (torch, gradviz):  # the message names the class, whose module path differs
        with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE .* of type structured'):
            _p(T).global_unstructured([(lin(T), "weight")], _p(T).LnStructured, amount=1, n=2)
    same_error(lambda T: _p(T).global_unstructured(3, _p(T).L1Unstructured, amount=1))
    same_error(lambda T: _p(T).PruningContainer(_p(T).Identity()).add_pruning_method(3))


def test_failed_pruning_restores_the_parameter():
    for T in (torch, gradviz):
        m = T.nn.Linear(3, 4)
        with pytest.raises(ValueError):
            _p(T).l1_unstructured(m, "weight", amount=13)
        assert [k for k, _ in m.named_parameters()] == ["bias", "weight"]
        assert not _p(T).is_pruned(m)
