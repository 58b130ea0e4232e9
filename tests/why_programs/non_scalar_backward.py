# why: --error -> non_scalar_backward
import torch

x = torch.randn(5, requires_grad=True)
y = x * 2
y.backward()  # WHERE
