# why: --error -> freed
import torch

w = torch.randn(3, requires_grad=True)
y = (w.exp() * 2).sum()
y.backward()  # WHERE
y.backward()
