# Source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/388 ("In the function
#   backward_D_basic, why operate detach() for fake???"), backward_D_basic as quoted in the issue
# Bug (the question): the generator gets no gradient from the discriminator's loss, because the
#   fake image is detached before the discriminator sees it (on purpose in CycleGAN: this is the
#   answer the maintainer gave, now from the trace).
# Changes: netG/netD are Linear layers, criterionGAN an MSE against 1/0, and the method a function.
# why: --grad netG.weight -> detached
import torch
import torch.nn as nn

netG = nn.Linear(3, 3)
netD = nn.Linear(3, 1)
criterion = nn.MSELoss()


def criterionGAN(pred, target_is_real):
    return criterion(pred, torch.full_like(pred, 1.0 if target_is_real else 0.0))


def backward_D_basic(netD, real, fake):
    # Real
    pred_real = netD(real)
    loss_D_real = criterionGAN(pred_real, True)
    # Fake
    pred_fake = netD(fake.detach())  # WHERE
    loss_D_fake = criterionGAN(pred_fake, False)
    # Combined loss
    loss_D = (loss_D_real + loss_D_fake) * 0.5
    # backward
    loss_D.backward()
    return loss_D


real = torch.randn(2, 3)
fake = netG(torch.randn(2, 3))
backward_D_basic(netD, real, fake)
