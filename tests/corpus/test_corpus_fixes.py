"""Differential tests for the fixes the real-program corpus (tests/corpus) asked for, one per first
cause: each against torch 2.13, which is required (a missing torch fails these, never skips)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch

import gradviz
from tests._diff import walk

BOTH = [torch, gradviz]


def _structure(t):
    return walk([t])[0]


# -- legacy autograd.Variable (the five nlp tutorials) ---------------------------------------------
def test_variable_is_a_detached_tensor_as_in_torch():
    for T in BOTH:
        Variable = T.autograd.Variable
        u = T.ones(2)
        w = Variable(u)
        w.add_(1)  # shares storage and version counter, as detach() does
        assert u.tolist() == [2.0, 2.0] and u._version == 1 and w._version == 1
        assert isinstance(u, Variable) and not isinstance([1.0], Variable)
        v = Variable(T.ones(2), requires_grad=True)
        assert v.requires_grad and v.is_leaf
        y = T.ones(2, requires_grad=True) * 2
        d = Variable(y)
        assert d.grad_fn is None and not d.requires_grad
        assert tuple(Variable().shape) == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        gradviz.autograd.Variable([1.0])
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        torch.autograd.Variable([1.0])


# -- 0-d factories (dynamic_net, polynomial_module, d2l autograd: randn(()) was shape [1]) -----------
@pytest.mark.parametrize("make", [
    lambda T: T.randn(()), lambda T: T.randn(size=()), lambda T: T.rand([]), lambda T: T.randint(5, ()),
    lambda T: T.randn((), dtype=T.float64), lambda T: T.randn(()).normal_(),
])
def test_zero_dim_random_factories_keep_their_shape_and_values(make):
    torch.manual_seed(3)
    gradviz.manual_seed(3)
    t, g = make(torch), make(gradviz)
    assert tuple(g.shape) == tuple(t.shape) == ()
    assert g.item() == t.item()


# -- set_default_device (polynomial_autograd) -------------------------------------------------------
def test_set_default_device():
    try:
        for T in BOTH:
            T.set_default_device("cpu")
            assert str(T.get_default_device()) == "cpu" and str(T.zeros(1).device) == "cpu"
            T.set_default_device(None)
            assert str(T.get_default_device()) == "cpu"
            T.set_default_device(T.device("cpu"))
            assert str(T.ones(()).device) == "cpu"
    finally:
        torch.set_default_device(None)
        gradviz.set_default_device(None)


# -- torch.save / torch.load / torch.serialization (quickstart, mnist, word_language_model) ---------
def test_gradviz_save_is_torch_save_and_load_stays_the_trace_loader(tmp_path):
    lin = gradviz.nn.Linear(2, 1)
    gradviz.save(lin.state_dict(), tmp_path / "m.pt")
    sd = gradviz.serialization.load(tmp_path / "m.pt")
    assert np.array_equal(sd["weight"].numpy(), lin.weight.detach().numpy())
    with gradviz.trace(str(tmp_path / "t.json")):
        lin(gradviz.ones(1, 2)).sum().backward()
    assert type(gradviz.load(str(tmp_path / "t.json"))).__name__ == "Trace"


def test_save_load_state_dict_and_whole_model():
    gradviz.install_as_torch()
    try:
        import torch as gt  # gradviz standing in

        assert gt.save is gradviz.serialization.save and gt.load is gradviz.serialization.load
        m = gt.nn.Sequential(gt.nn.Linear(3, 2), gt.nn.ReLU())
        buf = io.BytesIO()
        gt.save(m.state_dict(), buf)
        buf.seek(0)
        sd = gt.load(buf, weights_only=True)
        assert list(sd) == ["0.weight", "0.bias"]
        assert np.array_equal(sd["0.weight"].numpy(), m[0].weight.detach().numpy())
        buf = io.BytesIO()
        gt.save(m, buf)
        buf.seek(0)
        with gt.serialization.safe_globals([gt.nn.Linear, gt.nn.modules.linear.Linear]):
            m2 = gt.load(buf)
        assert type(m2[0].weight).__name__ == "Parameter" and m2[0].weight.requires_grad
        x = gt.ones(1, 3)
        assert np.array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    finally:
        gradviz.uninstall_as_torch()


def test_saved_tensor_keeps_requires_grad_but_not_history_as_in_torch():
    for T in BOTH:
        x = T.tensor(3.0, requires_grad=True) * 2
        buf = io.BytesIO()
        T.save({"a": x, "i": T.arange(3)}, buf)
        buf.seek(0)
        got = T.load(buf) if T is torch else gradviz.serialization.load(buf)
        assert got["a"].requires_grad and got["a"].grad_fn is None and got["a"].item() == 6.0
        assert got["i"].tolist() == [0, 1, 2] and str(got["i"].dtype).endswith("int64")


def test_torch_nn_modules_paths_the_programs_name():
    gradviz.install_as_torch()
    try:
        import torch as gt

        assert gt.nn.modules.activation.MultiheadAttention is gradviz.nn.MultiheadAttention
        assert issubclass(gt.nn.modules.linear.NonDynamicallyQuantizableLinear, gradviz.nn.Linear)
        gt.nn.LSTM(2, 3).flatten_parameters()  # a no-op off cuDNN, as in torch
    finally:
        gradviz.uninstall_as_torch()


# -- Categorical.log_prob (reinforce, actor_critic): no ExpandBackward0 for a same-shape broadcast --
def test_categorical_log_prob_graph_matches_torch():
    out = []
    for T in BOTH:
        T.manual_seed(0)
        w = T.tensor([[0.3, -0.2, 0.5]], requires_grad=True)
        m = T.distributions.Categorical(T.softmax(w, dim=-1))
        a = m.sample()
        lp = m.log_prob(a)
        lp2 = m.log_prob(a)
        assert (
            lp.grad_fn.next_functions[0][0].next_functions[0][0]
            is lp2.grad_fn.next_functions[0][0].next_functions[0][0]
        )  # the logits are computed once (torch's lazy_property)
        (-lp.sum()).backward()
        out.append((_structure(lp), a.tolist(), lp.tolist(), w.grad.numpy().copy()))
    (ts, ta, tl, tg), (gs, ga, gl, gg) = out
    assert gs == ts and ga == ta
    assert np.allclose(gl, tl, rtol=1e-6) and np.allclose(gg, tg, rtol=1e-5)


# -- arange (d2l_mlp_activations: 35 of 160 values differed) ---------------------------------------
@pytest.mark.parametrize("args", [(-8, 8, 0.1), (0, 1, 0.01), (-3.3, 7.1, 0.37), (0, 100, 0.7), (1, 2, 1 / 3),
                                  (5, -3, -0.3), (0, 50, 0.013), (0, 400, 0.013), (0.5, 7)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arange_float_values_equal_torch(args, dtype):
    t = torch.arange(*args, dtype=getattr(torch, dtype)).numpy()
    g = gradviz.arange(*args, dtype=getattr(gradviz, dtype)).numpy()
    assert g.dtype == t.dtype and g.shape == t.shape
    assert np.array_equal(g, t), f"{int((g != t).sum())} of {t.size} values differ"


def test_arange_default_dtype_values_equal_torch():
    assert np.array_equal(gradviz.arange(-8.0, 8.0, 0.1).numpy(), torch.arange(-8.0, 8.0, 0.1).numpy())
    assert math.isclose(gradviz.arange(-8.0, 8.0, 0.1)[35].item(), torch.arange(-8.0, 8.0, 0.1)[35].item(),
                        rel_tol=0, abs_tol=0)


# -- MultiheadAttention's SDPA path (word_language_model Transformer): UnsafeViewBackward0 ---------
def test_multihead_attention_need_weights_false_graph_matches_torch():
    out = []
    for T in BOTH:
        T.manual_seed(0)
        # dropout in training takes SDPA's math path, whose output needs the reshape's copy
        mha = T.nn.MultiheadAttention(4, 2, dropout=0.5)
        x = T.randn(3, 2, 4, requires_grad=True)
        y, _ = mha(x, x, x, need_weights=False)
        out.append((_structure(y), y.detach().numpy().copy()))
    assert out[1][0] == out[0][0]
    assert "UnsafeViewBackward0" in [n for n, _ in out[1][0]]
    assert np.allclose(out[1][1], out[0][1], rtol=1e-4, atol=1e-6)


# -- the corpus harness: a sum that cancels is compared at its terms' scale (two_layer_net) ---------
def test_harness_compares_a_cancelling_sum_at_its_terms_scale():
    from tests.corpus import harness

    # two_layer_net's 19th step: float32 matmuls summed in another order by each BLAS, every
    # element within 1e-5 relative, the sum of ~1e3 mixed-sign terms off by 12 in 47315
    torch_rec = {"shape": [100, 10], "dtype": "float32", "sum": 47315.275, "abssum": 6.5e6, "norm": 2.0e5}
    gv_rec = dict(torch_rec, sum=47302.936)
    assert harness._diff_summary(torch_rec, gv_rec, "leaf") is None
    assert harness._diff_summary(torch_rec, dict(torch_rec, sum=47315.275 + 5e3), "leaf") is not None
