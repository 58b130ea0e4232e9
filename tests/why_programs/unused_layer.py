# why: -> unused
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.extra = nn.Linear(8, 8)  # never called in forward
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


net = Net()
loss = net(torch.randn(5, 4)).pow(2).mean()
loss.backward()
