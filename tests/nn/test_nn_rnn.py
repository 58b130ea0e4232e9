"""RNN, LSTM and GRU (and cells) against torch 2.13's CPU path: nodes, order, values, gradients."""

from __future__ import annotations

import pytest

import tests._diff as diff
from tests._nn_diff import check_module, leaf, same_error


def seq(*shape, rg=True):
    return lambda T: (leaf(T, *shape, seed=1, requires_grad=rg),)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("kw", [
    {}, {"num_layers": 2}, {"bidirectional": True}, {"batch_first": True}, {"bias": False},
    {"num_layers": 2, "bidirectional": True, "dropout": 0.5},
])
def test_recurrent_float64(kind, kw):
    # float64: torch's native CPU path (the LSTM's oneDNN kernel takes float32 only)
    train = "dropout" not in kw  # dropout is random: eval mode leaves it out
    check_module(lambda nn: getattr(nn, kind)(3, 4, **kw), seq(3, 2, 3), train=train, out_index=0)


def test_rnn_relu_and_hidden_outputs():
    check_module(lambda nn: nn.RNN(3, 4, nonlinearity="relu"), seq(3, 2, 3), out_index=0)
    check_module(lambda nn: nn.GRU(3, 4, num_layers=2), seq(3, 2, 3), out_index=1)


def test_unbatched():
    check_module(lambda nn: nn.GRU(3, 4), seq(3, 3), out_index=0)


@pytest.mark.parametrize("kind", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cells(kind, monkeypatch):
    idx = 0 if kind == "LSTMCell" else None
    check_module(lambda nn: getattr(nn, kind)(3, 4), seq(2, 3), out_index=idx)
    check_module(lambda nn: getattr(nn, kind)(3, 4, bias=False), seq(3), out_index=idx)


@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}, {"batch_first": True}])
@pytest.mark.parametrize("out_index", [0, 1])
def test_lstm_float32_onednn_node(kw, out_index, monkeypatch):
    """float32: one MkldnnRnnLayerBackward0 per layer and direction; values to float32's precision
    (oneDNN's kernel sums in another order)."""
    monkeypatch.setattr(diff, "RTOL", 2e-4)
    monkeypatch.setattr(diff, "ATOL", 2e-5)

    def prog(T):
        import torch

        import gradviz
        from tests._nn_diff import copy_params

        torch.manual_seed(0)
        ref = torch.nn.LSTM(3, 4, **kw)
        m = ref if T is torch else gradviz.nn.LSTM(3, 4, **kw)
        if T is not torch:
            copy_params(ref, m)
        x = T.tensor(leaf(T, 3, 2, 3, seed=1, requires_grad=False).numpy().astype("float32"), requires_grad=True)
        out = m(x)
        o = out[0] if out_index == 0 else out[1][0]
        g = T.tensor(leaf(T, *o.shape, seed=99, requires_grad=False).numpy().astype("float32"))
        return diff.Case(roots=[o], run=lambda: o.backward(g), grads_of=[x, *m.parameters()])

    # The five AccumulateGrads this node makes ready at once share one key; torch's heap runs
    # them as 1, 3, 5, 2, 4, and so must gradviz's ReadyQueue.
    diff.check(prog)


def test_recurrent_errors():
    same_error(lambda T: T.nn.LSTM(3, 4)(T.zeros(5, 1, 2)))
    same_error(lambda T: T.nn.LSTM(3, 4)(T.zeros(2, 3, 4, 5)))
    same_error(lambda T: T.nn.GRU(3, 4)(T.zeros(2, 3, 4, 5)))
    same_error(lambda T: T.nn.LSTM(3, 4)(T.zeros(2, 1, 3), (T.zeros(1, 2, 4), T.zeros(1, 1, 4))))
    same_error(lambda T: T.nn.GRU(3, 4)(T.zeros(2, 1, 3), T.zeros(1, 2, 4)))
    same_error(lambda T: T.nn.LSTMCell(3, 4)(T.zeros(2, 2)))
    same_error(lambda T: T.nn.LSTMCell(3, 4)(T.zeros(2, 2, 3)))


def test_repr_and_names():
    import torch

    import gradviz

    for make in (lambda nn: nn.GRU(3, 4, 2, bidirectional=True, batch_first=True, dropout=0.1),
                 lambda nn: nn.RNN(3, 4, nonlinearity="relu", bias=False), lambda nn: nn.LSTMCell(3, 4),
                 lambda nn: nn.GRUCell(3, 4, bias=False), lambda nn: nn.LSTM(3, 4)):
        a, b = make(torch.nn), make(gradviz.nn)
        assert repr(a) == repr(b)
        assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
        assert [tuple(p.shape) for p in a.parameters()] == [tuple(p.shape) for p in b.parameters()]


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_initial_state_with_grad(kind):
    def inputs(T):
        x = leaf(T, 3, 2, 3, seed=1)
        h0 = leaf(T, 2, 2, 4, seed=2)
        if kind == "LSTM":
            return (x, (h0, leaf(T, 2, 2, 4, seed=3)))
        return (x, h0)

    def prog(T):
        import torch

        import gradviz
        from tests._nn_diff import copy_params

        torch.manual_seed(0)
        ref = getattr(torch.nn, kind)(3, 4, num_layers=2).double()
        m = ref if T is torch else getattr(gradviz.nn, kind)(3, 4, num_layers=2).double()
        if T is not torch:
            copy_params(ref, m)
        x, h = inputs(T)
        out, hn = m(x, h)
        last = hn[0] if kind == "LSTM" else hn
        loss = (out * leaf(T, *out.shape, seed=7, requires_grad=False)).sum() + (last * last).sum()
        hs = list(h) if kind == "LSTM" else [h]
        return diff.Case(roots=[loss], run=loss.backward, grads_of=[x, *hs, *m.parameters()])

    diff.check(prog)
