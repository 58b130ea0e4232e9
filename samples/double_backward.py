"""Second derivatives: create_graph=True makes the backward pass itself differentiable."""

import gradviz as torch

x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
y = (x**3).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)  # 3x^2, with a graph
print("dy/dx   =", g)
g.sum().backward()  # d/dx sum(3x^2) = 6x
print("d2y/dx2 =", x.grad)
