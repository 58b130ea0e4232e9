# why: --grad w -> not_leaf
import torch

w = torch.randn(3, requires_grad=True) * 0.1  # WHERE
x = torch.randn(3)
loss = (w * x).sum()
loss.backward()
