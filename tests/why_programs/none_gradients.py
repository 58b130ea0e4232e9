# why: --grad w -> none_gradients
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return None


w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
loss = (Scale.apply(w) + b).sum()  # WHERE
loss.backward()
