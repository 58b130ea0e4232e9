# why: --error -> inplace
import torch

w = torch.randn(3, requires_grad=True)
y = w.exp()
y.add_(1)  # WHERE
loss = y.sum()
loss.backward()
