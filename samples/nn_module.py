"""A model written the way the PyTorch tutorials write one: an nn.Module subclass with Linear
layers and ReLU, CrossEntropyLoss, SGD with momentum, and a DataLoader over a TensorDataset.

Its parameters show in the trace under their module names (fc1.weight, fc2.bias, ...).
"""

import gradviz as torch
from gradviz import nn, optim
from gradviz.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


torch.manual_seed(0)
inputs = torch.randn(12, 4)
labels = torch.randint(0, 3, (12,))
loader = DataLoader(TensorDataset(inputs, labels), batch_size=4, shuffle=False)

model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
