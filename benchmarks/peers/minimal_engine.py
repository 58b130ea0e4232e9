"""The floor: about the least a reverse-mode engine over numpy can do in pure Python.

Each op makes a ``T`` holding its parents and a closure from the output gradient to one
gradient per parent; ``backward`` sorts the graph once (iteratively, so 10,000-deep chains are
fine) and walks it in reverse, summing gradients in place on the node. No hooks, no devices,
no dtype checks, no queue, no threads: what gradviz pays on top of this is the price of being
torch-shaped (and watchable), which is what issue 7's ratios put a number on.
"""

from __future__ import annotations

import numpy as np


def _unbroadcast(g, shape):
    if g.shape == shape:
        return g
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdims=True)
    return g


class T:
    __slots__ = ("data", "grad", "parents", "back", "requires_grad")

    def __init__(self, data, parents=(), back=None, requires_grad=False):
        self.data = data
        self.grad = None
        self.parents = parents
        self.back = back
        self.requires_grad = requires_grad or back is not None

    def __add__(self, o):
        if isinstance(o, T):
            a, b = self.data.shape, o.data.shape
            return T(self.data + o.data, (self, o), lambda g: (_unbroadcast(g, a), _unbroadcast(g, b)))
        return T(self.data + o, (self,), lambda g: (g,))

    __radd__ = __add__

    def __mul__(self, o):
        if isinstance(o, T):
            x, y = self.data, o.data
            return T(x * y, (self, o), lambda g: (_unbroadcast(g * y, x.shape), _unbroadcast(g * x, y.shape)))
        return T(self.data * o, (self,), lambda g: (g * o,))

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0

    def __truediv__(self, o):
        return self * (1.0 / o)

    def __matmul__(self, o):
        x, y = self.data, o.data
        # An input's gradient costs a matmul as big as the forward: skip it where not needed.
        need_x, need_y = self.requires_grad, o.requires_grad
        return T(x @ y, (self, o), lambda g: (g @ y.T if need_x else None, x.T @ g if need_y else None))

    def tanh(self):
        out = np.tanh(self.data)
        return T(out, (self,), lambda g: (g * (1.0 - out * out),))

    def sum(self):
        shape, dt = self.data.shape, self.data.dtype
        return T(self.data.sum(), (self,), lambda g: (np.broadcast_to(g, shape).astype(dt),))

    def log_softmax(self, dim):
        z = self.data - self.data.max(dim, keepdims=True)
        out = z - np.log(np.exp(z).sum(dim, keepdims=True))
        return T(out, (self,), lambda g: (g - np.exp(out) * g.sum(dim, keepdims=True),))

    def cross_entropy(self, labels):
        """Mean softmax cross-entropy of (N, C) scores against class indices, fused as torch's
        F.cross_entropy is: its gradient is softmax - onehot, one pass."""
        rows = np.arange(len(labels))
        z = self.data - self.data.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))

        def back(g):
            d = np.exp(logp)
            d[rows, labels] -= 1.0
            return (d * (g / len(labels)),)

        return T(-logp[rows, labels].mean(), (self,), back)

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents if p.requires_grad and id(p) not in seen)
        self.grad = np.ones_like(self.data)
        for node in reversed(order):
            if node.back is None:
                continue  # a leaf: its .grad is the result
            grads = node.back(node.grad)
            node.grad = None  # an intermediate's gradient is not kept, as in torch
            for p, g in zip(node.parents, grads):
                if p.requires_grad:
                    p.grad = g if p.grad is None else p.grad + g
