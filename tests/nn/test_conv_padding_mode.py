"""Conv1d/2d/3d with padding_mode reflect, replicate or circular against torch 2.13: F.pad's node
under the convolution (which pads no more), values, gradients, repr and the error for an unknown
mode; Module.half()/bfloat16()."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _walk(t: Any) -> list:
    seen, out, stack = set(), [], [t.grad_fn]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        out.append(f.name().split("::")[-1])
        stack.extend(g for g, _ in reversed(f.next_functions))
    return out


CASES = [
    ("Conv1d", (2, 3, 7), dict(kernel_size=3, padding=2)),
    ("Conv2d", (1, 2, 5, 6), dict(kernel_size=3, padding=1)),
    ("Conv2d", (1, 2, 5, 6), dict(kernel_size=(3, 2), padding=(1, 2), stride=2)),
    ("Conv2d", (1, 2, 6, 6), dict(kernel_size=3, padding="same", dilation=2)),
    ("Conv2d", (1, 2, 5, 5), dict(kernel_size=3, padding="valid")),
    ("Conv3d", (1, 1, 4, 4, 4), dict(kernel_size=3, padding=1)),
]


def _run(m: Any, cls: str, shape: tuple, kw: dict, mode: str) -> tuple:
    m.manual_seed(0)
    conv = getattr(m.nn, cls)(shape[1], 3, padding_mode=mode, **kw)
    x = m.tensor(np.random.default_rng(1).standard_normal(shape), dtype=m.float32, requires_grad=True)
    y = conv(x)
    (y * y).sum().backward()
    return _walk(y), repr(conv), y.detach().numpy(), x.grad.numpy(), conv.weight.grad.numpy()


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
@pytest.mark.parametrize("cls,shape,kw", CASES)
def test_conv_padding_mode_matches_torch(cls: str, shape: tuple, kw: dict, mode: str) -> None:
    want, got = _run(torch, cls, shape, kw, mode), _run(gradviz, cls, shape, kw, mode)
    assert got[:2] == want[:2]
    for g, w in zip(got[2:], want[2:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_unknown_padding_mode_is_refused_as_torch() -> None:
    msgs = []
    for m in (torch, gradviz):
        with pytest.raises(ValueError) as e:
            m.nn.Conv2d(1, 1, 3, padding_mode="mirror")
        msgs.append(str(e.value).split("}")[-1])
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("method,dtype", [("half", "float16"), ("bfloat16", "bfloat16")])
def test_module_half_and_bfloat16_as_torch(method: str, dtype: str) -> None:
    for m in (torch, gradviz):
        mod = getattr(m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3)), method)()
        assert {str(t.dtype) for t in mod.state_dict().values()} == {f"torch.{dtype}", "torch.int64"}
