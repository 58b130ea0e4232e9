# why: --grad w -> detached (an .item() round trip: torch.tensor(scale.item()) is a new leaf)
import torch

w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
scale = w.pow(2).sum()
s = torch.tensor(scale.item())  # WHERE
loss = (b * s).sum()
loss.backward()
