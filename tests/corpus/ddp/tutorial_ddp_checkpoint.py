# Source: github.com/pytorch/tutorials intermediate_source/ddp_tutorial.rst ("Basic Use Case" and
#   "Save and Load Checkpoints": ToyModel, demo_basic, demo_checkpoint)
#   @ 1a68b577065d93d673208e061db221c62885e75d
# Changes (shrunk to CPU and gloo, launched by torchrun): rank and world size come from torchrun's
#   environment instead of mp.spawn and a fixed port; the model stays on the CPU (no device_ids,
#   no map_location); the checkpoint goes to the current folder; a seed per rank; each rank prints
#   its parameters' checksum at the end of each demo.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()  # noqa: UP008 - as the source has it
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def checksum(rank, what, model):
    s = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {rank} {what} checksum {s.hex()}", flush=True)


def demo_basic(rank, world_size):
    print(f"Running basic DDP example on rank {rank}.")

    model = ToyModel()
    ddp_model = DDP(model)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)
    loss_fn(outputs, labels).backward()
    optimizer.step()
    checksum(rank, "basic", ddp_model)


def demo_checkpoint(rank, world_size):
    print(f"Running DDP checkpoint example on rank {rank}.")

    model = ToyModel()
    ddp_model = DDP(model)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    CHECKPOINT_PATH = "model.checkpoint"
    if rank == 0:
        torch.save(ddp_model.state_dict(), CHECKPOINT_PATH)

    dist.barrier()
    ddp_model.load_state_dict(torch.load(CHECKPOINT_PATH))

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)
    loss_fn = nn.MSELoss()
    loss_fn(outputs, labels).backward()
    optimizer.step()
    checksum(rank, "checkpoint", ddp_model)

    if rank == 0:
        os.remove(CHECKPOINT_PATH)


if __name__ == "__main__":
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    setup(rank, world_size)
    torch.manual_seed(rank)
    demo_basic(rank, world_size)
    demo_checkpoint(rank, world_size)
    cleanup()
