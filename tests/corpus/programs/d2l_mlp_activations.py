# Source: github.com/d2l-ai/d2l-en chapter_multilayer-perceptrons/mlp.md @ 23d7a5aecceee57d1292c56e90cce307f183bb0a
# Changes: the chapter's PyTorch code blocks as a script (tests/corpus/d2l2py.py); the d2l package's
#   import and its plotting calls dropped (d2l is not installed; they only draw).
# block 2
import torch

# block 6
x = torch.arange(-8.0, 8.0, 0.1, requires_grad=True)
y = torch.relu(x)

# block 10
y.backward(torch.ones_like(x), retain_graph=True)

# block 14
y = torch.sigmoid(x)

# block 18
# Clear out previous gradients
x.grad.data.zero_()
y.backward(torch.ones_like(x),retain_graph=True)

# block 22
y = torch.tanh(x)

# block 26
# Clear out previous gradients
x.grad.data.zero_()
y.backward(torch.ones_like(x),retain_graph=True)
