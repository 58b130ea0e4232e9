# Source: github.com/pytorch/tutorials beginner_source/understanding_leaf_vs_nonleaf_tutorial.py
#   @ 679432430fced456808254e3ae1476cd7d633ef0
# Changes: prose trimmed (the figures and the summary table dropped); the code is as written.
"""
Understanding requires_grad, retain_grad, Leaf, and Non-leaf Tensors
====================================================================

**Author:** `Justin Silver <https://github.com/j-silv>`__

This tutorial explains the subtleties of ``requires_grad``,
``retain_grad``, leaf, and non-leaf tensors using a simple example.
"""

import torch
import torch.nn.functional as F


######################################################################
# Next, we instantiate a simple network to focus on the gradients. This
# will be an affine layer, followed by a ReLU activation, and ending with
# a MSE loss between prediction and label tensors.
#

# tensor setup
x = torch.ones(1, 3)                      # input with shape: (1, 3)
W = torch.ones(3, 2, requires_grad=True)  # weights with shape: (3, 2)
b = torch.ones(1, 2, requires_grad=True)  # bias with shape: (1, 2)
y = torch.ones(1, 2)                      # output with shape: (1, 2)

# forward pass
z = (x @ W) + b                           # pre-activation with shape: (1, 2)
y_pred = F.relu(z)                        # activation with shape: (1, 2)
loss = F.mse_loss(y_pred, y)              # scalar loss


######################################################################
# Leaf vs. non-leaf tensors
# -------------------------
#

# prints True because new tensors are leafs by convention
print(f"{x.is_leaf=}")

# prints False because tensor is the result of an operation with at
# least one input having requires_grad=True
print(f"{z.is_leaf=}")


######################################################################
# ``requires_grad``
# -----------------
#

print(f"{x.requires_grad=}") # prints False because requires_grad=False by default
print(f"{W.requires_grad=}") # prints True because we set requires_grad=True in constructor
print(f"{z.requires_grad=}") # prints True because tensor is a non-leaf node


######################################################################
# ``retain_grad``
# ---------------
#

loss.backward()


######################################################################
# Calling ``backward()`` populates the ``grad`` field of all leaf tensors
# which had ``requires_grad=True``.
#

print(f"{W.grad=}")
print(f"{b.grad=}")


######################################################################
# You might be wondering about the other tensors in our network. Let’s
# check the remaining leaf nodes:
#

# prints all None because requires_grad=False
print(f"{x.grad=}")
print(f"{y.grad=}")


######################################################################
# Let’s now look at an intermediate non-leaf node:
#

print(f"{z.grad=}")


######################################################################
# PyTorch returns ``None`` for the gradient and also warns us that a
# non-leaf node’s ``grad`` attribute is being accessed. [...] we can use
# the ``retain_grad()`` function on a tensor.
#

# we have to re-run the forward pass
z = (x @ W) + b
y_pred = F.relu(z)
loss = F.mse_loss(y_pred, y)

# tell PyTorch to store the gradients after backward()
z.retain_grad()
y_pred.retain_grad()
loss.retain_grad()

# have to zero out gradients otherwise they would accumulate
W.grad = None
b.grad = None

# backpropagation
loss.backward()

# print gradients for all tensors that have requires_grad=True
print(f"{W.grad=}")
print(f"{b.grad=}")
print(f"{z.grad=}")
print(f"{y_pred.grad=}")
print(f"{loss.grad=}")


######################################################################
# If we look at the state of the computational graph now, we see that the
# ``retains_grad`` attribute has changed for the intermediate tensors. By
# convention, this attribute will print ``False`` for any leaf node, even
# if it requires its gradient.
#
# If we call ``retain_grad()`` on a tensor that has ``requires_grad=False``,
# PyTorch actually throws an error, since it can’t store the gradient if
# it is never calculated.
#
# ::
#
#    >>> x.retain_grad()
#    RuntimeError: can't retain_grad on Tensor that has requires_grad=False
#
