"""DDP's unused-parameter failure: `extra` takes part in no loss, find_unused_parameters=False, so
the second iteration's forward raises "Expected to have finished reduction in the prior iteration"."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.extra = nn.Linear(4, 4)

    def forward(self, x):
        return self.used(x)


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(Net())
for _ in range(2):
    model(torch.randn(2, 4)).sum().backward()
