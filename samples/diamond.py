"""A diamond: one leaf feeds two branches that meet again.

The leaf's AccumulateGrad waits in not_ready until both branches (MulBackward0 and ExpBackward0)
have sent it their gradient, which its InputBuffer sums: the smallest graph where dependency
counts and InputBuffer accumulation matter.
    python samples/diamond.py
    gradviz run samples/diamond.py && gradviz replay diamond.trace.json --step
"""

import gradviz as torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * 2  # MulBackward0
c = a.exp()  # ExpBackward0
d = b + c  # AddBackward0: two inputs from the same leaf
loss = d.sum()  # SumBackward0
loss.backward()
print("a.grad =", a.grad)  # 2 + exp(a)
