"""A small DDP training (gloo, CPU): a few SGD steps, then each rank prints its parameters' checksum.

Run under a launcher: torchrun --nproc-per-node 2 train.py [--steps N] [--hook] [--gather]
--hook registers the user's own comm hook (allreduce_hook); --gather also calls all_gather and
broadcast outside DDP.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--hook", action="store_true")
    p.add_argument("--gather", action="store_true")
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Net(), bucket_cap_mb=0.001)  # small buckets: several per step
    if a.hook:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        model.register_comm_hook(None, default_hooks.allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(a.steps):
        x = torch.randn(5, 8, generator=g)
        y = torch.randint(0, 3, (5,), generator=g)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    if a.gather:
        t = torch.tensor([float(rank)])
        out = [torch.zeros(1) for _ in range(world)]
        dist.all_gather(out, t)
        dist.broadcast(t, src=0)
        dist.barrier()
    s = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {rank} checksum {s.hex()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
