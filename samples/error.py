"""An exception inside a backward: it stops the task and reaches the caller with its type.

Exits with status 1, as an uncaught exception would; the trace still holds every event.
"""

import gradviz as torch


class Fragile(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("Fragile.backward refuses negative gradients")


x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (Fragile.apply(x) * x).sum()
y.backward()  # raises ValueError
