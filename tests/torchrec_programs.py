"""Real-style torch programs the torchrec tests record: each builds its model and runs its
backward/grad calls, with fixed inputs (torch.manual_seed), and returns the leaves it trains."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def mlp() -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = MLP()
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return list(model.parameters())


def conv() -> list[torch.Tensor]:
    torch.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(4 * 4 * 4, 5))
    x = torch.randn(3, 2, 8, 8)
    net(x).logsumexp(1).mean().backward()
    return list(net.parameters())


def transformer() -> list[torch.Tensor]:
    torch.manual_seed(2)
    block = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
    x = torch.randn(2, 5, 16, requires_grad=True)
    block(x).pow(2).mean().backward()
    return [x, *block.parameters()]


def grad_call() -> list[torch.Tensor]:
    torch.manual_seed(3)
    a = torch.randn(4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    z = (a.sin() * b).sum() + (a * a).mean()
    ga, gb = torch.autograd.grad(z, (a, b), create_graph=True)
    (ga.pow(2).sum() + gb.sum()).backward(inputs=[a])
    return [a, b]


class Twice(torch.autograd.Function):
    """A Function whose backward runs a backward of its own (reentrant)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            inner = x.detach().requires_grad_()
            (inner.exp() * 2).sum().backward()
        return g * 2 + 0 * inner.grad


def custom_reentrant() -> list[torch.Tensor]:
    torch.manual_seed(4)
    w = torch.randn(5, requires_grad=True)
    (Twice.apply(w.tanh()) * w).sum().backward()
    return [w]


def checkpointed() -> list[torch.Tensor]:
    torch.manual_seed(5)
    lin1, lin2 = nn.Linear(4, 8), nn.Linear(8, 2)
    x = torch.randn(3, 4, requires_grad=True)

    def inner(t: torch.Tensor) -> torch.Tensor:
        return torch.tanh(lin1(t))

    h = checkpoint(inner, x, use_reentrant=True)
    lin2(h).sum().backward()
    return [x, *lin1.parameters(), *lin2.parameters()]


PROGRAMS = {"mlp": mlp, "conv": conv, "transformer": transformer, "grad": grad_call,
            "custom_reentrant": custom_reentrant, "checkpoint": checkpointed}


class Block(nn.Module):
    def __init__(self, d: int, heads: int, ctx: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A small GPT: token and position embeddings, 2 blocks, a tied head."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, ctx: int = 16, layers: int = 2) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, ctx) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def gpt() -> list[torch.Tensor]:
    torch.manual_seed(6)
    model = GPT()
    idx = torch.randint(0, 64, (4, 16))
    loss = model(idx, torch.roll(idx, -1, 1))
    loss.backward()
    return list(model.parameters())
