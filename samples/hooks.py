"""Every kind of hook, in the order the engine calls them.

Tensor hooks (register_hook), retain_grad, node pre-hooks and post-hooks: the printout shows
torch's order for each node: tensor pre-hooks, retains_grad hooks, pre-hooks, the node, post-hooks.
"""

import gradviz as torch

x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
h = x * 3
h.retain_grad()
h.register_hook(lambda g: print("tensor hook on h:", g) or g * 2)  # doubles h's gradient
y = h.relu()
y.grad_fn.register_prehook(lambda grads: print("pre-hook of", y.grad_fn.name()))
y.grad_fn.register_hook(lambda gi, go: print("post-hook of", y.grad_fn.name()))
x.register_hook(lambda g: print("leaf hook on x:", g))
y.sum().backward()
print("h.grad =", h.grad)
print("x.grad =", x.grad)
