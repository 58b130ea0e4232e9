# Source: https://github.com/richzhang/PerceptualSimilarity/issues/69 ("Function 'SqrtBackward'
#   returned nan values in its 0th output"), the normalize_tensor shown in the report
# Bug: a feature vector of zeros: sqrt(sum(x**2)) is 0, and sqrt's derivative at 0 is infinite;
#   the eps added after the sqrt keeps the forward finite, not the backward.
# Changes: a 2x3 feature map with one all-zero position stands in for the network's features.
# why: --nan -> non_finite_backward
import torch


def normalize_tensor(in_feat, eps=1e-10):
    norm_factor = torch.sqrt(torch.sum(in_feat**2, dim=1, keepdim=True))  # WHERE
    return in_feat / (norm_factor + eps)


feat = torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]).unsqueeze(0).requires_grad_()
d = normalize_tensor(feat).sum()
d.backward()
print(feat.grad)
