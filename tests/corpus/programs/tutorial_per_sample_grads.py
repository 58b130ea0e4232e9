# -*- coding: utf-8 -*-
# Source: github.com/pytorch/tutorials intermediate_source/per_sample_grads.py
#   @ 0bb46a4a7c3e4a4d185372221fecb5754f68fcca
# Changes: device 'cuda' -> 'cpu'; batch of 8 instead of 64 (the targets' randint follows it);
#   the float64 diagnosis printed only on a mismatch kept; the performance section
#   (torch.utils.benchmark timings) and the prose dropped.
"""
Per-sample-gradients
====================
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)

# Here's a simple CNN and loss function:

class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output

def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


device = 'cpu'

num_models = 10
batch_size = 8
data = torch.randn(batch_size, 1, 28, 28, device=device)

targets = torch.randint(10, (batch_size,), device=device)

model = SimpleCNN().to(device=device)
predictions = model(data)  # move the entire mini-batch through the model

loss = loss_fn(predictions, targets)
loss.backward()  # back propagate the 'average' gradient of this mini-batch


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)

    prediction = model(sample)
    loss = loss_fn(prediction, target)

    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    """ manually process each sample with per sample gradient """
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads

per_sample_grads = compute_sample_grads(data, targets)

print(per_sample_grads[0].shape)

from torch.func import functional_call, vmap, grad

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)

    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss

ft_compute_grad = grad(compute_loss)

ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))

ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for i, (per_sample_grad, ft_per_sample_grad) in enumerate(
    zip(per_sample_grads, ft_per_sample_grads.values())
):
    is_close = torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    if not is_close:
        abs_diff = (per_sample_grad - ft_per_sample_grad).abs()
        max_diff = abs_diff.max().item()
        mean_diff = abs_diff.mean().item()
        print(f"Gradient {i} mismatch:")
        print(f"  Max absolute difference: {max_diff}")
        print(f"  Mean absolute difference: {mean_diff}")
        print(f"  Shape of tensors: {per_sample_grad.shape}")

    # Keep the original assertion
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
