"""DDP's unused-parameter failure one iteration later: `b` takes part in the first iteration only,
so the third forward raises, and bucket 0 (which holds b) is the bucket that never filled."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.c = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = self.a(x)
        if self.calls == 1:
            y = self.b(y)
        return self.c(y)


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(Net())
for _ in range(3):
    model(torch.randn(2, 4)).sum().backward()
