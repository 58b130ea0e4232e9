"""ReLU's backward (threshold_backward) equals torch's bit for bit: ``input <= threshold ? 0 : grad``.

The branch-free kernel (large gradients) and the np.where one (small) must both let a gradient through
where the saved result is NaN, cut a NaN gradient to +0 where the input is cut, and keep signed zeros.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4,), (64, 256)])
def test_relu_backward_matches_torch_bitwise(dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    flat_x, flat_g = x.reshape(-1), g.reshape(-1)
    flat_x[0], flat_g[0] = np.nan, 5.0  # NaN input: torch passes the gradient
    flat_x[1], flat_g[1] = -1.0, np.nan  # cut input, NaN gradient: +0
    flat_x[2], flat_g[2] = 0.0, -7.0  # exactly the threshold: cut
    flat_x[3], flat_g[3] = 2.0, -0.0  # a kept signed zero
    tx = torch.tensor(x, requires_grad=True)
    torch.relu(tx).backward(torch.tensor(g))
    gx = gradviz.tensor(x, requires_grad=True)
    out = gradviz.relu(gx)
    assert out.grad_fn.name() == "ReluBackward0"
    out.backward(gradviz.tensor(g))
    want = tx.grad.numpy()
    got = gx.grad.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


def test_relu_backward_of_a_transposed_gradient() -> None:
    """A non-contiguous gradient (a transposed view) selects the same values."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 64)).astype("float32")
    g = rng.standard_normal((64, 32)).astype("float32").T
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.relu(tx).backward(torch.tensor(np.ascontiguousarray(g)))
    gx = gradviz.tensor(x, requires_grad=True)
    gt = gradviz.tensor(np.ascontiguousarray(g.T)).t()  # (32, 64), strides of a transpose
    assert not gt.is_contiguous()
    gradviz.nn.functional.relu(gx).backward(gt)
    np.testing.assert_array_equal(gx.grad.numpy(), tx.grad.numpy())
