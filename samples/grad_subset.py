"""grad() on a subset of the inputs: exec_info prunes what is not needed.

Only the nodes on a path from the loss to `w` run; the branch to `b` is pruned, and `b.grad`
stays None. The same with backward(inputs=[...]).
"""

import gradviz as torch

w = torch.tensor([0.5, -1.0], requires_grad=True)
b = torch.tensor([0.1, 0.2], requires_grad=True)
x = torch.tensor([2.0, 3.0])
loss = ((w * x).tanh() + b.exp()).sum()
(gw,) = torch.autograd.grad(loss, [w], retain_graph=True)
print("d loss / d w =", gw)
loss.backward(inputs=[b])
print("w.grad =", w.grad, " b.grad =", b.grad)
