# Source: https://github.com/haowang1992/DSN/blob/74b9dea7da58c8219df90d8e208a74a520230a1e/src/train_cse_resnet_tuberlin_ext.py
#   (validate(): the model's output computed inside torch.no_grad()), with the question of
#   https://github.com/pytorch/pytorch/issues/91529 (a result with no grad_fn "can not backward")
# Bug: a loss computed from outputs made inside torch.no_grad() has no grad_fn; calling backward()
#   on it (as a training step would) fails. The answer's line is the model call inside the block.
# Changes: the model is a Linear layer, the data random; backward() added after validate's loss,
#   which is what turns the evaluation code into the error.
# why: --error -> no_grad_fn
import torch
import torch.nn as nn

model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
input = torch.randn(5, 4)
target = torch.tensor([0, 1, 2, 0, 1])
with torch.no_grad():
    output = model(input)  # WHERE
loss = criterion(output, target)
loss.backward()
