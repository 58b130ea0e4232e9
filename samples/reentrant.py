"""Reentrant backward: a custom Function whose backward runs a backward of its own.

The inner graph task runs nested on the same thread, one reentrant depth deeper, sharing the
thread's CPU ready queue; its nodes pop first because deeper tasks take priority.
"""

import gradviz as torch


class Checkpointed(torch.autograd.Function):
    """Recomputes x.tanh() * 2 in backward instead of saving it (as checkpointing does)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.tanh() * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            inner = x.detach().requires_grad_()
            out = inner.tanh() * 2
            out.backward(grad)  # the reentrant call
        return inner.grad


x = torch.tensor([0.5, -0.25, 1.0], requires_grad=True)
y = Checkpointed.apply(x * 3).sum()
y.backward()
print("x.grad =", x.grad)
