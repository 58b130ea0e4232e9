# why: --error -> view_inplace
import torch

x = torch.randn(4, 2, requires_grad=True)
a, b = (x * 2).unbind(1)
a.mul_(2)  # WHERE
