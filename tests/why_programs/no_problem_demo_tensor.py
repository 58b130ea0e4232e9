# why: -> no_problem
# A tutorial's demo: a tensor made to require grad and used in an op whose result nobody
# differentiates, beside a backward of something else. Its .grad is None, as meant.
import torch

x = torch.ones(2, 2, requires_grad=True)
out = (x * 3).mean()
a = torch.randn(2, 2)
a.requires_grad_(True)
b = (a * a).sum()
print(b.grad_fn)
out.backward()
print(x.grad)
