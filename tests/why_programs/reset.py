# why: --grad w -> reset
import torch

w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
opt = torch.optim.SGD([w], lr=0.1)
loss = (w * x).sum()
loss.backward()
opt.step()
opt.zero_grad()  # WHERE
