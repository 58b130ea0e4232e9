# why: -> broadcast_loss
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Linear(3, 1)
x = torch.randn(16, 3)
y = x.sum(1)  # shape (16,), the model's output is (16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)  # WHERE
    loss.backward()
    opt.step()
