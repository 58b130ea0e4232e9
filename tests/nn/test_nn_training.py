"""Several training steps of small models under torch and gradviz (parameters copied from torch,
plain SGD written out): the same losses and the same parameters after each step."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from tests._nn_diff import copy_params


def _models(nn):
    class TextModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.lstm = nn.LSTM(4, 5, batch_first=True)
            self.ln = nn.LayerNorm(5)
            self.head = nn.Linear(5, 7)

        def forward(self, x):
            h, _ = self.lstm(self.emb(x))
            return self.head(self.ln(h)).reshape(-1, 7)

    return {
        "mlp": nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 3)),
        "cnn": nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(4, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4, 3)),
        "text": TextModel(),
    }


def _inputs(T, name):
    rng = np.random.default_rng(5)
    if name == "cnn":
        return T.tensor(rng.standard_normal((4, 1, 6, 6))), T.tensor(rng.integers(0, 3, 4))
    if name == "text":
        return T.tensor(rng.integers(0, 7, (2, 5))), T.tensor(rng.integers(0, 7, 10))
    return T.tensor(rng.standard_normal((4, 6))), T.tensor(rng.integers(0, 3, 4))


@pytest.mark.parametrize("name", ["mlp", "cnn", "text"])
def test_sgd_steps_match(name):
    torch.manual_seed(0)
    ref = _models(torch.nn)[name].double()
    mine = _models(gradviz.nn)[name].double()
    copy_params(ref, mine)
    runs = []
    for T, m in ((torch, ref), (gradviz, mine)):
        x, y = _inputs(T, name)
        losses = []
        for _ in range(3):
            m.zero_grad()
            loss = T.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            with T.no_grad():
                for p in m.parameters():
                    p.sub_(p.grad * 0.5)
            losses.append(loss.item())
        runs.append((losses, [p.detach().numpy().copy() for p in m.parameters()],
                     [b.detach().numpy().copy() for b in m.buffers()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-10)
    for a, b in zip(runs[0][1] + runs[0][2], runs[1][1] + runs[1][2]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
