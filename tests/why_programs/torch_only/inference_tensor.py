# why: --error -> inference_tensor
import torch

w = torch.randn(3, requires_grad=True)
with torch.inference_mode():
    x = torch.randn(3)
y = (w * x).sum()  # WHERE
