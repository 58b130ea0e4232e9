# Source: https://github.com/pytorch/pytorch/issues/2421 ("Gradient of zero norm is nan"), and the
#   variant PR https://github.com/pytorch/pytorch/pull/2775 says still gives NaN once norm() was
#   fixed: the norm written as .pow(2).sum().sqrt()
# Bug: the L2 norm of a zero vector; its square root has an infinite derivative at 0, and the
#   backward multiplies it by 0.
# Changes: Variable(torch.zeros(1)) written as torch.zeros(1, requires_grad=True) (torch >= 0.4).
# why: --nan -> non_finite_backward
import torch

x = torch.zeros(1, requires_grad=True)
n = x.pow(2).sum().sqrt()  # WHERE
n.backward()
print(x.grad)
