# why: --grad w -> pruned
import torch

w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
x = torch.randn(3)
loss = (w * x + b).sum()
loss.backward(inputs=[b])  # WHERE
