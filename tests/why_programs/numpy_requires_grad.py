# why: --error -> numpy_requires_grad
import torch

w = torch.randn(3, requires_grad=True)
y = w * 2
arr = y.numpy()  # WHERE
