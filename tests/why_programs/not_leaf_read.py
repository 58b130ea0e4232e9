# why: -> not_leaf
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
out = model(torch.randn(8, 4))  # WHERE
loss = out.pow(2).mean()
loss.backward()
print(out.grad)  # None: out is not a leaf (torch warns)
