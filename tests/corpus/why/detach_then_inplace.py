# Source: https://github.com/pytorch/pytorch/issues/6990 ("Differences between .data and .detach"),
#   the example in the maintainer's answer
# Bug: a detached tensor shares storage and version counter with its source; zeroing it in place
#   overwrites the sigmoid output that SigmoidBackward saved.
# Changes: none beyond the print.
# why: --error -> inplace
import torch

a = torch.tensor([1, 2, 3.0], requires_grad=True)
out = a.sigmoid()
c = out.detach()
c.zero_()  # WHERE
out.sum().backward()
