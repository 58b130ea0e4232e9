# why: --grad w -> detached (the .detach() cuts w off the loss)
import torch

w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
x = torch.randn(3)
h = (w * x).detach()  # WHERE
loss = (h * b).sum()
loss.backward()
