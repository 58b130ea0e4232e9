# why: --nan -> non_finite_forward
# A meant -inf mask first, then the real NaN: log of a probability that is exactly zero.
import torch
import torch.nn.functional as F

x = torch.randn(3, 4, requires_grad=True)
mask = torch.tensor([[False, True, True, True]] * 3)
p = F.softmax(x.masked_fill(mask, float("-inf")), dim=-1)
loss = -(torch.log(p) * p.detach()).sum()  # WHERE
loss.backward()
