"""Anomaly mode catches the node that produced NaN, and shows where it was made.

sqrt at 0 has an infinite derivative; multiplied by 0 it becomes NaN in SqrtBackward0's output.
"""

import gradviz as torch

x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
with torch.autograd.detect_anomaly():
    y = x.sqrt() * torch.tensor([0.0, 1.0, 1.0])
    try:
        y.sum().backward()
    except RuntimeError as err:
        print("anomaly:", err)
