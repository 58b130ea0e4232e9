"""A real PyTorch script, as the tutorials write one: an nn.Module MLP, MSELoss and SGD for a
few steps. Recorded from torch's own engine, or run on gradviz's (``--engine gradviz``), it gives
the same trace: ``gradviz diff`` finds no divergence between the two.

    gradviz run -o torch_mlp.torch.json samples/torch_mlp.py
    gradviz run --engine gradviz -o torch_mlp.gradviz.json samples/torch_mlp.py
    gradviz diff torch_mlp.torch.json torch_mlp.gradviz.json
"""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 8)
        self.act = nn.Tanh()
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out(self.act(self.hidden(x)))


# fixed data and weights: the same numbers under either engine, whatever its random generator
x = torch.linspace(-1.0, 1.0, 24).reshape(6, 4)
y = (x * x).sum(dim=1, keepdim=True)
model = MLP()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (1 + 0.1 * i))

loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.6f}")
