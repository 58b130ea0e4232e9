# Source: github.com/d2l-ai/d2l-en chapter_convolutional-neural-networks/conv-layer.md @ 23d7a5aecceee57d1292c56e90cce307f183bb0a
# Changes: the chapter's PyTorch code blocks as a script (tests/corpus/d2l2py.py); the d2l package is not
#   installed: its import is replaced by a class after the imports holding the torch aliases (d2l.tensor,
#   d2l.zeros, d2l.reduce_sum, ...) the chapter calls, defined as the package defines them.
# block 2
import torch
from torch import nn

class d2l:  # stands in for `from d2l import torch as d2l` (not installed): the package's aliases this chapter uses
    tensor = torch.tensor
    zeros = torch.zeros
    ones = torch.ones
    rand = torch.rand
    reduce_sum = staticmethod(lambda x, *args, **kwargs: x.sum(*args, **kwargs))
    transpose = staticmethod(lambda x: x.t())
    reshape = staticmethod(lambda x, *args, **kwargs: x.reshape(*args, **kwargs))

# block 6
def corr2d(X, K):  #@save
    """Compute 2D cross-correlation."""
    h, w = K.shape
    Y = d2l.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = d2l.reduce_sum((X[i: i + h, j: j + w] * K))
    return Y

# block 9
X = d2l.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
K = d2l.tensor([[0.0, 1.0], [2.0, 3.0]])
corr2d(X, K)

# block 11
class Conv2D(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(kernel_size))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return corr2d(x, self.weight) + self.bias

# block 14
X = d2l.ones((6, 8))
X[:, 2:6] = 0
X

# block 17
K = d2l.tensor([[1.0, -1.0]])

# block 18
Y = corr2d(X, K)
Y

# block 19
corr2d(d2l.transpose(X), K)

# block 21
# Construct a two-dimensional convolutional layer with 1 output channel and a
# kernel of shape (1, 2). For the sake of simplicity, we ignore the bias here
conv2d = nn.LazyConv2d(1, kernel_size=(1, 2), bias=False)

# The two-dimensional convolutional layer uses four-dimensional input and
# output in the format of (example, channel, height, width), where the batch
# size (number of examples in the batch) and the number of channels are both 1
X = X.reshape((1, 1, 6, 8))
Y = Y.reshape((1, 1, 6, 7))
lr = 3e-2  # Learning rate

for i in range(10):
    Y_hat = conv2d(X)
    l = (Y_hat - Y) ** 2
    conv2d.zero_grad()
    l.sum().backward()
    # Update the kernel
    conv2d.weight.data[:] -= lr * conv2d.weight.grad
    if (i + 1) % 2 == 0:
        print(f'epoch {i + 1}, loss {l.sum():.3f}')

# block 25
d2l.reshape(conv2d.weight.data, (1, 2))
