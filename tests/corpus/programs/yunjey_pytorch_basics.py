# Source: github.com/yunjey/pytorch-tutorial tutorials/01-basics/pytorch_basics/main.py @ 0500d3df5a2a8080ccfccbc00aca0eacc21818db
# Changes: torchvision (not installed): CIFAR-10 (a download) replaced by a stand-in dataset of 128 random
#   3x32x32 images in [0, 1] with int labels, ToTensor by a stand-in; section 6 builds a pretrained
#   ResNet-18 (a download, from torchvision) and section 7 saves it: both run on a stand-in for
#   torchvision.models.resnet18, a small Module with the same fc attribute (3x224x224 -> 512 features
#   by a stride-32 conv and average pooling), built with default initialisation; data_iter.next() ->
#   next(data_iter) (iterators lost .next() in Python 3; the tutorial's line fails on torch 2.13);
#   torch.load('model.ckpt') gets weights_only=False (torch 2.6's default refuses a whole Module);
#   section 5's DataLoader over its 0-length template dataset: shuffle=True -> False (torch 2.13's
#   RandomSampler refuses a dataset of 0 samples).
import torch 
import torch.nn as nn
import numpy as np


class _Transforms:  # stands in for torchvision.transforms (not installed): the transforms used here, on tensors
    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, x):
            for t in self.transforms:
                x = t(x)
            return x

    class ToTensor:  # the stand-in datasets hold float tensors in [0, 1] already
        def __call__(self, x):
            return x

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, x):
            return (x - torch.tensor(self.mean).view(-1, 1, 1)) / torch.tensor(self.std).view(-1, 1, 1)

    class Pad:
        def __init__(self, padding):
            self.padding = padding

        def __call__(self, x):
            return torch.nn.functional.pad(x, [self.padding] * 4)

    class RandomHorizontalFlip:
        def __init__(self, p=0.5):
            self.p = p

        def __call__(self, x):
            return x.flip(-1) if torch.rand(1) < self.p else x

    class RandomCrop:
        def __init__(self, size):
            self.size = size

        def __call__(self, x):
            h, w = x.shape[-2:]
            i = torch.randint(0, h - self.size + 1, size=(1,)).item()
            j = torch.randint(0, w - self.size + 1, size=(1,)).item()
            return x[..., i:i + self.size, j:j + self.size]


transforms = _Transforms()


class _FakeImages(torch.utils.data.Dataset):  # stands in for a torchvision dataset (a download)
    shape = (1, 28, 28)

    def __init__(self, root=None, train=True, transform=None, download=False):
        n = self.sizes[0] if train else self.sizes[1]
        self.images = torch.rand(n, *self.shape)
        self.labels = torch.randint(0, 10, (n,))
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        image = self.images[idx]
        if self.transform is not None:
            image = self.transform(image)
        return image, int(self.labels[idx])


class FakeCIFAR10(_FakeImages):  # stands in for torchvision.datasets.CIFAR10: random 3x32x32 images in [0, 1]
    shape, sizes = (3, 32, 32), (128, 0)


class resnet18(nn.Module):  # stands in for torchvision.models.resnet18 (not installed; its weights a download)
    def __init__(self, pretrained=False):
        super().__init__()
        self.conv = nn.Conv2d(3, 512, kernel_size=32, stride=32)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


# ================================================================== #
#                         Table of Contents                          #
# ================================================================== #

# 1. Basic autograd example 1               (Line 25 to 39)
# 2. Basic autograd example 2               (Line 46 to 83)
# 3. Loading data from numpy                (Line 90 to 97)
# 4. Input pipline                          (Line 104 to 129)
# 5. Input pipline for custom dataset       (Line 136 to 156)
# 6. Pretrained model                       (Line 163 to 176)
# 7. Save and load model                    (Line 183 to 189) 


# ================================================================== #
#                     1. Basic autograd example 1                    #
# ================================================================== #

# Create tensors.
x = torch.tensor(1., requires_grad=True)
w = torch.tensor(2., requires_grad=True)
b = torch.tensor(3., requires_grad=True)

# Build a computational graph.
y = w * x + b    # y = 2 * x + 3

# Compute gradients.
y.backward()

# Print out the gradients.
print(x.grad)    # x.grad = 2 
print(w.grad)    # w.grad = 1 
print(b.grad)    # b.grad = 1 


# ================================================================== #
#                    2. Basic autograd example 2                     #
# ================================================================== #

# Create tensors of shape (10, 3) and (10, 2).
x = torch.randn(10, 3)
y = torch.randn(10, 2)

# Build a fully connected layer.
linear = nn.Linear(3, 2)
print ('w: ', linear.weight)
print ('b: ', linear.bias)

# Build loss function and optimizer.
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)

# Forward pass.
pred = linear(x)

# Compute loss.
loss = criterion(pred, y)
print('loss: ', loss.item())

# Backward pass.
loss.backward()

# Print out the gradients.
print ('dL/dw: ', linear.weight.grad) 
print ('dL/db: ', linear.bias.grad)

# 1-step gradient descent.
optimizer.step()

# You can also perform gradient descent at the low level.
# linear.weight.data.sub_(0.01 * linear.weight.grad.data)
# linear.bias.data.sub_(0.01 * linear.bias.grad.data)

# Print out the loss after 1-step gradient descent.
pred = linear(x)
loss = criterion(pred, y)
print('loss after 1 step optimization: ', loss.item())


# ================================================================== #
#                     3. Loading data from numpy                     #
# ================================================================== #

# Create a numpy array.
x = np.array([[1, 2], [3, 4]])

# Convert the numpy array to a torch tensor.
y = torch.from_numpy(x)

# Convert the torch tensor to a numpy array.
z = y.numpy()


# ================================================================== #
#                         4. Input pipeline                           #
# ================================================================== #

# Download and construct CIFAR-10 dataset.
train_dataset = FakeCIFAR10(root='../../data/',
                                             train=True, 
                                             transform=transforms.ToTensor(),
                                             download=True)

# Fetch one data pair (read data from disk).
image, label = train_dataset[0]
print (image.size())
print (label)

# Data loader (this provides queues and threads in a very simple way).
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=64, 
                                           shuffle=True)

# When iteration starts, queue and thread start to load data from files.
data_iter = iter(train_loader)

# Mini-batch images and labels.
images, labels = next(data_iter)

# Actual usage of the data loader is as below.
for images, labels in train_loader:
    # Training code should be written here.
    pass


# ================================================================== #
#                5. Input pipeline for custom dataset                 #
# ================================================================== #

# You should build your custom dataset as below.
class CustomDataset(torch.utils.data.Dataset):
    def __init__(self):
        # TODO
        # 1. Initialize file paths or a list of file names. 
        pass
    def __getitem__(self, index):
        # TODO
        # 1. Read one data from file (e.g. using numpy.fromfile, PIL.Image.open).
        # 2. Preprocess the data (e.g. torchvision.Transform).
        # 3. Return a data pair (e.g. image and label).
        pass
    def __len__(self):
        # You should change 0 to the total size of your dataset.
        return 0 

# You can then use the prebuilt data loader. 
custom_dataset = CustomDataset()
train_loader = torch.utils.data.DataLoader(dataset=custom_dataset,
                                           batch_size=64, 
                                           shuffle=False)


# ================================================================== #
#                        6. Pretrained model                         #
# ================================================================== #

# Download and load the pretrained ResNet-18.
resnet = resnet18(pretrained=True)

# If you want to finetune only the top layer of the model, set as below.
for param in resnet.parameters():
    param.requires_grad = False

# Replace the top layer for finetuning.
resnet.fc = nn.Linear(resnet.fc.in_features, 100)  # 100 is an example.

# Forward pass.
images = torch.randn(64, 3, 224, 224)
outputs = resnet(images)
print (outputs.size())     # (64, 100)


# ================================================================== #
#                      7. Save and load the model                    #
# ================================================================== #

# Save and load the entire model.
torch.save(resnet, 'model.ckpt')
model = torch.load('model.ckpt', weights_only=False)

# Save and load only the model parameters (recommended).
torch.save(resnet.state_dict(), 'params.ckpt')
resnet.load_state_dict(torch.load('params.ckpt'))
