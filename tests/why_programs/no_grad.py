# why: --grad w -> no_grad
import torch

w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
x = torch.randn(3)
with torch.no_grad():
    h = w * x  # WHERE
loss = (h + b).sum()
loss.backward()
