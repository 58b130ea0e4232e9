# why: -> no_problem
# A causal mask of -inf before a softmax: an Inf of the forward, meant, that reaches no loss and
# no gradient.
import torch
import torch.nn.functional as F

torch.manual_seed(0)
q = torch.randn(2, 4, 8, requires_grad=True)
k = torch.randn(2, 4, 8, requires_grad=True)
scores = q @ k.transpose(-2, -1) / 8 ** 0.5
mask = torch.tril(torch.ones(4, 4)) == 0
weights = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
loss = (weights @ k).pow(2).mean()
loss.backward()
