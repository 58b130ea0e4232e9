"""Where did the NaN come from? A hand-written cross entropy takes the log of a probability that
softmax rounded to exactly 0: log(0) is -inf, and 0 * -inf is NaN.

    gradviz run -o why_nan.trace.json samples/why_nan.py
    gradviz why why_nan.trace.json --nan
"""

import gradviz as torch

logits = torch.tensor([[10.0, -100.0], [0.5, 0.25]], requires_grad=True)
target = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
probs = torch.softmax(logits, dim=1)
log_probs = torch.log(probs)  # probs[0, 1] is 0 in float32
loss = -(target * log_probs).sum()
loss.backward()
print("loss:", loss.item())
