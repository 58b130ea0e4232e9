"""torch.nn.utils.rnn against torch 2.13: PackedSequence and the pack/pad functions (graphs:
PackPaddedSequenceBackward0, the pad kernel's slices and copies, the index_selects of unsorted
batches), and RNN, LSTM and GRU run on a PackedSequence (torch's packed layers, step by step)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from tests._diff import Case, check, leaf
from tests._nn_diff import copy_params, same_error


def _R(T):
    return T.nn.utils.rnn


def _lengths(T, *v):
    return T.tensor(np.array(v, dtype=np.int64))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce", [((4, 3, 1), True), ((2, 4, 3), False), ((3, 3, 3), True),
                                             ((1, 4, 4, 2), False)])
def test_pack_and_pad_round_trip(batch_first, lengths, enforce):
    def prog(T):
        shape = (len(lengths), 4, 2) if batch_first else (4, len(lengths), 2)
        x = leaf(T, *shape, seed=1)
        packed = _R(T).pack_padded_sequence(x, list(lengths), batch_first=batch_first, enforce_sorted=enforce)
        out, lens = _R(T).pad_packed_sequence(packed, batch_first=batch_first, padding_value=-1.5, total_length=5)
        return Case(roots=[out, packed.data], run=lambda: out.backward(leaf(T, *out.shape, seed=99,
                                                                            requires_grad=False)),
                    grads_of=[x], values=[lens, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices])

    check(prog)


def test_pack_sequence_unpack_unpad():
    def prog(T):
        seqs = [leaf(T, n, 3, seed=n) for n in (2, 4, 3)]
        packed = _R(T).pack_sequence(seqs, enforce_sorted=False)
        back = _R(T).unpack_sequence(packed)
        padded = _R(T).pad_sequence(seqs)
        unpadded = _R(T).unpad_sequence(padded, _lengths(T, 2, 4, 3))
        out = T.cat(back + unpadded)
        return Case(roots=[out], run=lambda: out.backward(leaf(T, *out.shape, seed=99, requires_grad=False)),
                    grads_of=seqs, values=[packed.data, packed.batch_sizes])

    check(prog)


def test_invert_permutation_and_packed_sequence_api():
    for T in (torch, gradviz):
        p = _R(T).invert_permutation(_lengths(T, 2, 0, 3, 1))
        assert p.tolist() == [1, 3, 0, 2] and _R(T).invert_permutation(None) is None
        packed = _R(T).pack_sequence([T.ones(3, 2), T.ones(2, 2)])
        assert isinstance(packed, tuple) and packed._fields == ("data", "batch_sizes", "sorted_indices",
                                                                "unsorted_indices")
        assert packed.double().data.dtype == T.float64 and packed.to(T.float64).batch_sizes.tolist() == [2, 2, 1]
        assert packed.sorted_indices is None and not packed.is_cuda
        again = _R(T).PackedSequence(packed.data, packed.batch_sizes)
        assert again.unsorted_indices is None


def test_pack_errors():
    R = _R
    same_error(lambda T: R(T).pack_padded_sequence(T.zeros(3, 2, 1), [1, 3]))
    same_error(lambda T: R(T).pack_padded_sequence(T.zeros(3, 2, 1), [3, 0]))
    same_error(lambda T: R(T).pack_padded_sequence(T.zeros(3, 2, 1), [3, 2, 1]))
    same_error(lambda T: R(T).pad_packed_sequence(R(T).pack_sequence([T.zeros(3), T.zeros(2)]), total_length=2))


def _rnn_prog(kind, kw, lengths, hx=False, batch_first=False, dtype="float64"):
    def prog(T):
        torch.manual_seed(0)
        ref = getattr(torch.nn, kind)(3, 4, batch_first=batch_first, **kw)
        ref = ref.double() if dtype == "float64" else ref
        if T is torch:
            m = ref
        else:
            m = getattr(gradviz.nn, kind)(3, 4, batch_first=batch_first, **kw)
            m = m.double() if dtype == "float64" else m
            copy_params(ref, m)
        m.eval()
        dt = getattr(T, dtype)
        b, t = len(lengths), max(lengths)
        x = leaf(T, *((b, t, 3) if batch_first else (t, b, 3)), seed=1).to(dt).detach().requires_grad_()
        packed = _R(T).pack_padded_sequence(x, list(lengths), batch_first=batch_first, enforce_sorted=False)
        dirs = 2 if kw.get("bidirectional") else 1
        h_shape = (kw.get("num_layers", 1) * dirs, b, 4)
        h0 = None
        leaves = [x]
        if hx:
            h = leaf(T, *h_shape, seed=3).to(dt).detach().requires_grad_()
            leaves.append(h)
            h0 = h
            if kind == "LSTM":
                c = leaf(T, *h_shape, seed=4).to(dt).detach().requires_grad_()
                leaves.append(c)
                h0 = (h, c)
        out, hidden = m(packed, h0)
        padded, _ = _R(T).pad_packed_sequence(out, batch_first=batch_first)
        last = hidden[0] if kind == "LSTM" else hidden
        extra = hidden[1].sum() if kind == "LSTM" else 0.0
        loss = (padded * leaf(T, *padded.shape, seed=7, requires_grad=False).to(dt)).sum() + \
            (last * leaf(T, *last.shape, seed=8, requires_grad=False).to(dt)).sum() + extra
        return Case(roots=[loss, out.data, last], run=lambda: loss.backward(), grads_of=leaves + list(m.parameters()))

    return prog


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}])
def test_recurrent_on_packed(kind, kw):
    check(_rnn_prog(kind, kw, (3, 5, 2)))


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_recurrent_on_packed_with_hidden_batch_first(kind):
    check(_rnn_prog(kind, {"bidirectional": True}, (2, 4, 4, 1), hx=True, batch_first=True))


def test_lstm_float32_on_packed_is_the_native_path(monkeypatch):
    import tests._diff as diff

    monkeypatch.setattr(diff, "RTOL", 2e-4)
    monkeypatch.setattr(diff, "ATOL", 2e-5)
    check(_rnn_prog("LSTM", {}, (3, 2, 1), dtype="float32"))
