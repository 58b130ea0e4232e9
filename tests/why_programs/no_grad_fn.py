# why: --error -> no_grad_fn
import torch

w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
with torch.no_grad():
    loss = (w * x).sum()  # WHERE
loss.backward()
