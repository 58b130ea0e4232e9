# Source: github.com/d2l-ai/d2l-en chapter_preliminaries/autograd.md @ 23d7a5aecceee57d1292c56e90cce307f183bb0a
# Changes: the chapter's PyTorch code blocks as a script (tests/corpus/d2l2py.py); the d2l package's
#   plotting calls dropped (d2l is not installed; they only draw).
# block 2
import torch

# block 6
x = torch.arange(4.0)
x

# block 10
# Can also create x = torch.arange(4.0, requires_grad=True)
x.requires_grad_(True)
x.grad  # The gradient is None by default

# block 13
y = 2 * torch.dot(x, x)
y

# block 17
y.backward()
x.grad

# block 21
x.grad == 4 * x

# block 25
x.grad.zero_()  # Reset the gradient
y = x.sum()
y.backward()
x.grad

# block 29
x.grad.zero_()
y = x * x
y.backward(gradient=torch.ones(len(y)))  # Faster: y.sum().backward()
x.grad

# block 33
x.grad.zero_()
y = x * x
u = y.detach()
z = u * x

z.sum().backward()
x.grad == u

# block 37
x.grad.zero_()
y.sum().backward()
x.grad == 2 * x

# block 41
def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c

# block 45
a = torch.randn(size=(), requires_grad=True)
d = f(a)
d.backward()

# block 49
a.grad == d / a
