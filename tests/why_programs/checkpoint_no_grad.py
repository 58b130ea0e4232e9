# why: --grad block.0.weight -> checkpoint_no_grad
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
head = nn.Linear(4, 1)
x = torch.randn(8, 4)
h = checkpoint(block, x, use_reentrant=True)  # WHERE
loss = head(h).sum()
loss.backward()
