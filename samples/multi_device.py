"""A small model split over two devices, trained for a few steps: the loss falls.

The first layer lives on virtual:0, the second on virtual:1; activations move with .to(). In
backward each device's nodes run on that device's engine worker thread (gradviz-virtual:0,
gradviz-virtual:1) and the CPU nodes on this thread, as torch runs CUDA nodes on its device
threads. Record it to watch the threads and queues:

    python samples/multi_device.py
    gradviz run samples/multi_device.py -o multi_device.trace.json && gradviz replay multi_device.trace.json
"""

import sys
import threading

import gradviz as torch

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
dev0, dev1 = torch.device("virtual:0"), torch.device("virtual:1")

# Learn y = sin(x0) + x1 * x2 from 64 samples that start on the CPU.
x = torch.randn(64, 3)
y = (x[:, 0].sin() + x[:, 1] * x[:, 2]).unsqueeze(1)

# Layer 1 on virtual:0, layer 2 on virtual:1.
w1 = (torch.randn(3, 16) * 0.5).to(dev0).requires_grad_()
b1 = torch.zeros(16, device=dev0, requires_grad=True)
w2 = (torch.randn(16, 1) * 0.25).to(dev1).requires_grad_()
b2 = torch.zeros(1, device=dev1, requires_grad=True)
params = [w1, b1, w2, b2]

# Which thread runs each layer's backward: a pre-hook on the node records it (first step only).
threads = {}


def where(name):
    def pre_hook(grads):
        threads[name] = threading.current_thread().name  # returns None: the gradients stay

    return pre_hook


def model(inp):
    hidden = (inp.to(dev0) @ w1 + b1).tanh()  # on virtual:0
    out = hidden.to(dev1) @ w2 + b2  # on virtual:1
    return hidden, out.to("cpu")  # back to the CPU for the loss


for step in range(steps):
    hidden, pred = model(x)
    loss = ((pred - y) ** 2).mean()
    if step == 0:
        hidden.grad_fn.register_prehook(where("layer 1 (tanh)"))
        pred.grad_fn.next_functions[0][0].register_prehook(where("layer 2 (add b2)"))
        loss.grad_fn.register_prehook(where("loss (mean)"))
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.1 * p.grad
    if step % 5 == 0 or step == steps - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}")

print("parameters on", sorted({str(p.device) for p in params}), "| grads on",
      sorted({str(p.grad.device) for p in params}))
print("backward ran on:", ", ".join(f"{k}: {v}" for k, v in threads.items()))
