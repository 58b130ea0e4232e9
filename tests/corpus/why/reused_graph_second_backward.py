# Source: https://github.com/zhangyu2234/Deep-learning-by-hand (README, "Problems: RuntimeError:
#   Trying to backward through the graph a second time")
# Bug: the labels Y are computed once from true_W, which requires grad, so every batch's loss
#   reaches back into the same graph; the first backward frees it, the second fails.
# Changes: 4000 samples -> 40, batch size 20 -> 10, one epoch; the repository's utils (relu, sgd,
#   squared loss, DataLoader) written inline.
# why: --error -> freed
import torch

num_samples, num_features, num_hiddens = 40, 2, 2
X = torch.randn((num_samples, num_features), dtype=torch.float32)
true_W = torch.randn((num_hiddens, 1), requires_grad=True, dtype=torch.float32)
true_b = torch.randn(1, requires_grad=True, dtype=torch.float32)
Y = torch.mm(X, true_W) + true_b

W = torch.normal(0, 0.01, size=(num_hiddens, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
batch_size, lr = 10, 0.01
for i in range(0, num_samples, batch_size):
    x, y = X[i:i + batch_size], Y[i:i + batch_size]
    l = ((torch.relu(torch.mm(x, W) + b) - y) ** 2 / 2).sum()  # noqa: E741 - the original names
    l.backward()  # WHERE
    with torch.no_grad():
        for p in (W, b):
            p -= lr * p.grad / batch_size
            p.grad.zero_()
