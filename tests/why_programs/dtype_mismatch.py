# why: --error -> dtype_mismatch
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
x = torch.from_numpy(np.random.randn(4, 3))  # float64, the model's weights float32
out = model(x)  # WHERE
