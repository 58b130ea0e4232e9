# Source: github.com/yunjey/pytorch-tutorial tutorials/03-advanced/variational_autoencoder/main.py @ 0500d3df5a2a8080ccfccbc00aca0eacc21818db
# Changes: torchvision datasets (downloads; torchvision is not installed) replaced by stand-ins defined in
#   the program: random images of the same shape in [0, 1] with int labels, and the torchvision
#   transforms used, on tensors;
#   128 images; num_epochs 15 -> 1, batch_size 128 -> 32, h_dim 400 -> 64;
#   save_image by a stand-in that drops the file (the images are still computed).
import os
import torch
import torch.nn as nn
import torch.nn.functional as F


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


class FakeMNIST(_FakeImages):  # stands in for torchvision.datasets.MNIST: random 1x28x28 images in [0, 1]
    shape, sizes = (1, 28, 28), (128, 0)


def save_image(tensor, path):  # stands in for torchvision.utils.save_image: the output file is dropped
    pass


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Create a directory if not exists
sample_dir = 'samples'
if not os.path.exists(sample_dir):
    os.makedirs(sample_dir)

# Hyper-parameters
image_size = 784
h_dim = 64
z_dim = 20
num_epochs = 1
batch_size = 32
learning_rate = 1e-3

# MNIST dataset
dataset = FakeMNIST(root='../../data',
                                     train=True,
                                     transform=transforms.ToTensor(),
                                     download=True)

# Data loader
data_loader = torch.utils.data.DataLoader(dataset=dataset,
                                          batch_size=batch_size, 
                                          shuffle=True)


# VAE model
class VAE(nn.Module):
    def __init__(self, image_size=784, h_dim=400, z_dim=20):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(image_size, h_dim)
        self.fc2 = nn.Linear(h_dim, z_dim)
        self.fc3 = nn.Linear(h_dim, z_dim)
        self.fc4 = nn.Linear(z_dim, h_dim)
        self.fc5 = nn.Linear(h_dim, image_size)
        
    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h), self.fc3(h)
    
    def reparameterize(self, mu, log_var):
        std = torch.exp(log_var/2)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h = F.relu(self.fc4(z))
        return F.sigmoid(self.fc5(h))
    
    def forward(self, x):
        mu, log_var = self.encode(x)
        z = self.reparameterize(mu, log_var)
        x_reconst = self.decode(z)
        return x_reconst, mu, log_var

model = VAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Start training
for epoch in range(num_epochs):
    for i, (x, _) in enumerate(data_loader):
        # Forward pass
        x = x.to(device).view(-1, image_size)
        x_reconst, mu, log_var = model(x)
        
        # Compute reconstruction loss and kl divergence
        # For KL divergence, see Appendix B in VAE paper or http://yunjey47.tistory.com/43
        reconst_loss = F.binary_cross_entropy(x_reconst, x, size_average=False)
        kl_div = - 0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())
        
        # Backprop and optimize
        loss = reconst_loss + kl_div
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 10 == 0:
            print ("Epoch[{}/{}], Step [{}/{}], Reconst Loss: {:.4f}, KL Div: {:.4f}" 
                   .format(epoch+1, num_epochs, i+1, len(data_loader), reconst_loss.item(), kl_div.item()))
    
    with torch.no_grad():
        # Save the sampled images
        z = torch.randn(batch_size, z_dim).to(device)
        out = model.decode(z).view(-1, 1, 28, 28)
        save_image(out, os.path.join(sample_dir, 'sampled-{}.png'.format(epoch+1)))

        # Save the reconstructed images
        out, _, _ = model(x)
        x_concat = torch.cat([x.view(-1, 1, 28, 28), out.view(-1, 1, 28, 28)], dim=3)
        save_image(x_concat, os.path.join(sample_dir, 'reconst-{}.png'.format(epoch+1)))
