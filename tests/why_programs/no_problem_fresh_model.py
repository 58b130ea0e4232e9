# why: -> no_problem
# A correct program: a model trained, saved, and loaded into a fresh model for evaluation (the
# fresh model's parameters have no .grad: nothing to explain), and a gradient taken with
# autograd.grad (which writes no .grad).
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for _ in range(3):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
path = os.path.join(tempfile.mkdtemp(), "m.pt")
torch.save(model.state_dict(), path)
fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
fresh.load_state_dict(torch.load(path))
with torch.no_grad():
    print(fresh(x).mean().item())
w = torch.randn(3, requires_grad=True)
(g,) = torch.autograd.grad((w ** 2).sum(), w)
