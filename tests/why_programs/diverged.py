# why: --nan -> diverged
import torch

torch.manual_seed(0)
w = torch.full((2, 1), 0.5, requires_grad=True)
x = torch.linspace(-10, 10, 40).reshape(20, 2)
y = (x ** 2).sum(1, keepdim=True)
opt = torch.optim.SGD([w], lr=1.0)
for _ in range(20):
    opt.zero_grad()
    loss = ((x @ w - y) ** 2).mean()  # WHERE
    loss.backward()
    opt.step()
