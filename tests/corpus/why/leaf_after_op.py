# Source: https://discuss.pytorch.org/t/how-to-define-a-leaf-tensor-in-pytorch-0-4-1/28461
# Bug: requires_grad=True set before .cuda() (the answer: "You could substitute .cuda() for * 2"),
#   so the tensor the program keeps is the op's result, not a leaf, and its .grad stays None.
# Changes: .cuda() replaced by * 2 as the answer suggests (no GPU needed); a loss and backward added.
# why: --grad a -> not_leaf
import torch

a = torch.rand(10, requires_grad=True) * 2  # WHERE
loss = (a * a).sum()
loss.backward()
print(a.is_leaf)
