# why: --nan -> non_finite_forward
import torch

w = torch.randn(3, requires_grad=True)
z = w * 0
y = torch.log(z)  # WHERE
loss = (y * 2).sum()
loss.backward()
