"""Why is a gradient None? The encoder's output is detached on its way to the loss (a line
meant for logging), so the encoder's weights never get a gradient.

    gradviz run -o why_none_grad.trace.json samples/why_none_grad.py
    gradviz why why_none_grad.trace.json --grad encoder.weight
"""

import gradviz as torch
from gradviz import nn

torch.manual_seed(0)
encoder = nn.Linear(4, 8)
head = nn.Linear(8, 1)
x, y = torch.randn(16, 4), torch.randn(16, 1)

features = encoder(x).relu()
features = features.detach()  # meant to log them; it also cuts the encoder off the loss
loss = ((head(features) - y) ** 2).mean()
loss.backward()
print("head.weight.grad is None:", head.weight.grad is None)
print("encoder.weight.grad is None:", encoder.weight.grad is None)
