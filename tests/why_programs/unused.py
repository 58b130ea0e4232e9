# why: --grad w2 -> unused
import torch

w1 = torch.randn(3, requires_grad=True)
w2 = torch.randn(3, requires_grad=True)
x = torch.randn(3)
loss = (w1 * x).sum()
loss.backward()
