# Source: https://github.com/tamarott/SinGAN/pull/126 (SinGAN fails on torch >= 1.5: "the OptimizerG
#   step operation performing inplace operations on the Generator parameters")
# Bug: the generator's output is computed once, then several generator steps each call
#   backward(retain_graph=True) through it and optimizerG.step(); the step writes the weights the
#   graph saved, and the next backward finds them changed.
# Changes: the generator is two Linear layers (SinGAN's is a stack of convolutions: a layer past the
#   first saves its weight), the discriminator one; 3 generator steps on one batch.
# why: --error -> inplace
import torch
import torch.nn as nn
import torch.optim as optim

netG = nn.Sequential(nn.Linear(4, 4), nn.LeakyReLU(0.2), nn.Linear(4, 4))
netD = nn.Linear(4, 1)
optimizerG = optim.Adam(netG.parameters(), lr=0.0005, betas=(0.5, 0.999))
noise = torch.randn(2, 4)
fake = netG(noise)
for j in range(3):  # noqa: B007 - as written
    netG.zero_grad()
    output = netD(fake)
    errG = -output.mean()
    errG.backward(retain_graph=True)
    optimizerG.step()  # WHERE
