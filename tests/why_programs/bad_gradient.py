# why: --error -> bad_gradient
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (2 * x * g).sum()  # a scalar: the wrong shape


x = torch.randn(3, requires_grad=True)
loss = Square.apply(x).sum()
loss.backward()  # WHERE
