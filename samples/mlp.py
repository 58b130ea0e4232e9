"""A tiny MLP trained with plain SGD: the loss falls.

    python samples/mlp.py
    gradviz run samples/mlp.py && gradviz render mlp.trace.json
"""

import sys

import gradviz as torch

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30

# Learn y = sin(x0) + x1 * x2 from 64 samples.
x = torch.randn(64, 3)
y = (x[:, 0].sin() + x[:, 1] * x[:, 2]).unsqueeze(1)

w1 = (torch.randn(3, 16) * 0.5).requires_grad_()
b1 = torch.zeros(16, requires_grad=True)
w2 = (torch.randn(16, 1) * 0.25).requires_grad_()
b2 = torch.zeros(1, requires_grad=True)
params = [w1, b1, w2, b2]

for step in range(steps):
    hidden = (x @ w1 + b1).tanh()
    pred = hidden @ w2 + b2
    loss = ((pred - y) ** 2).mean()
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.1 * p.grad
    if step % 5 == 0 or step == steps - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}")
