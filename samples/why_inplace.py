"""What caused the error? An in-place add overwrites the output sigmoid saved for its backward:
"one of the variables needed for gradient computation has been modified by an inplace operation".

Exits with status 1, as the uncaught error would.

    gradviz run -o why_inplace.trace.json samples/why_inplace.py
    gradviz why why_inplace.trace.json --error
"""

import gradviz as torch

torch.manual_seed(0)
x = torch.randn(4, 3)
w = torch.randn(3, 3, requires_grad=True)
h = (x @ w).sigmoid()
h += 1  # in place: sigmoid's backward needs the h it returned
loss = h.sum()
loss.backward()
