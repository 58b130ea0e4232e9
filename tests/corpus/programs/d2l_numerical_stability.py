# Source: github.com/d2l-ai/d2l-en chapter_multilayer-perceptrons/numerical-stability-and-init.md @ 23d7a5aecceee57d1292c56e90cce307f183bb0a
# Changes: the chapter's PyTorch code blocks as a script (tests/corpus/d2l2py.py); the d2l package's
#   import and its plotting calls dropped (d2l is not installed; they only draw).
# block 2
import torch

# block 6
x = torch.arange(-8.0, 8.0, 0.1, requires_grad=True)
y = torch.sigmoid(x)
y.backward(torch.ones_like(x))

# block 10
M = torch.normal(0, 1, size=(4, 4))
print('a single matrix \n',M)
for i in range(100):
    M = M @ torch.normal(0, 1, size=(4, 4))
print('after multiplying 100 matrices\n', M)
