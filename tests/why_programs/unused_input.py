# why: --error -> unused_input
import torch

x = torch.randn(3, requires_grad=True)
z = torch.randn(3, requires_grad=True)
y = (x * x).sum()
gx, gz = torch.autograd.grad(y, [x, z])  # WHERE
