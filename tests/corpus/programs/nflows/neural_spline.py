# Source: github.com/karpathy/pytorch-normalizing-flows nflib1.ipynb (and nflib/flows.py,
#   nflib/spline_flows.py, nflib/made.py, nflib/nets.py) @ b60e119b37be10ce2930ef9fa17e58686aaf2b3d
# Changes: the notebook's code cells as a script (tests/corpus/nb2py.py), plots and the autoreload
#   magics dropped; sklearn's make_moons (not installed) by the same two half-moons made with numpy;
#   1000 training steps -> 4 (prints every 2), the second training loop 500 -> 2 steps; the
#   visualisation cells keep their model.backward / model.sample calls, not the drawing.
import itertools

import numpy as np

import torch
import torch.optim as optim
import torch.nn.functional as F
import torch.nn.init as init
from torch import nn
from torch import distributions
from torch.distributions import MultivariateNormal, Uniform, TransformedDistribution, SigmoidTransform
from torch.nn.parameter import Parameter

from nflib.flows import (
    AffineConstantFlow, ActNorm, AffineHalfFlow,
    SlowMAF, MAF, IAF, Invertible1x1Conv,
    NormalizingFlow, NormalizingFlowModel,
)
from nflib.spline_flows import NSF_AR, NSF_CL


def make_moons(n_samples, noise):
    # stand-in for sklearn.datasets.make_moons: two interleaving half circles plus gaussian noise
    n_out = n_samples // 2
    n_in = n_samples - n_out
    outer = np.linspace(0, np.pi, n_out)
    inner = np.linspace(0, np.pi, n_in)
    X = np.vstack([np.append(np.cos(outer), 1 - np.cos(inner)),
                   np.append(np.sin(outer), 1 - np.sin(inner) - 0.5)]).T
    X += np.random.normal(scale=noise, size=X.shape)
    y = np.hstack([np.zeros(n_out), np.ones(n_in)])
    perm = np.random.permutation(n_samples)
    return X[perm], y[perm]


class DatasetMoons:
    """ two half-moons """
    def sample(self, n):
        moons = make_moons(n_samples=n, noise=0.05)[0].astype(np.float32)
        return torch.from_numpy(moons)

class DatasetMixture:
    """ 4 mixture of gaussians """
    def sample(self, n):
        assert n%4 == 0
        r = np.r_[np.random.randn(n // 4, 2)*0.5 + np.array([0, -2]),
                  np.random.randn(n // 4, 2)*0.5 + np.array([0, 0]),
                  np.random.randn(n // 4, 2)*0.5 + np.array([2, 2]),
                  np.random.randn(n // 4, 2)*0.5 + np.array([-2, 2])]
        return torch.from_numpy(r.astype(np.float32))

d = DatasetMoons()

x = d.sample(128)

# construct a model
prior = TransformedDistribution(Uniform(torch.zeros(2), torch.ones(2)), SigmoidTransform().inv) # Logistic distribution

# Neural splines, coupling
nfs_flow = NSF_CL if True else NSF_AR
flows = [nfs_flow(dim=2, K=8, B=3, hidden_dim=16) for _ in range(3)]
convs = [Invertible1x1Conv(dim=2) for _ in flows]
norms = [ActNorm(dim=2) for _ in flows]
flows = list(itertools.chain(*zip(norms, convs, flows)))

# construct the model
model = NormalizingFlowModel(prior, flows)

# optimizer
optimizer = optim.Adam(model.parameters(), lr=1e-4, weight_decay=1e-5) # todo tune WD
print("number of params: ", sum(p.numel() for p in model.parameters()))

model.train()
for k in range(4):
    x = d.sample(128)

    zs, prior_logprob, log_det = model(x)
    logprob = prior_logprob + log_det
    loss = -torch.sum(logprob) # NLL

    model.zero_grad()
    loss.backward()
    optimizer.step()

    if k % 2 == 0:
        print(loss.item())

model.eval()

x = d.sample(128)
zs, prior_logprob, log_det = model(x)
z = zs[-1]

x = x.detach().numpy()
z = z.detach().numpy()
p = model.prior.sample([128, 2]).squeeze()

zs = model.sample(128*8)
z = zs[-1]
z = z.detach().numpy()

ng = 20
xx, yy = np.linspace(-3, 3, ng), np.linspace(-3, 3, ng)
xv, yv = np.meshgrid(xx, yy)
xy = np.stack([xv, yv], axis=-1)
in_circle = np.sqrt((xy**2).sum(axis=2)) <= 3 # seems appropriate since we use radial distributions as priors
xy = xy.reshape((ng*ng, 2))
xy = torch.from_numpy(xy.astype(np.float32))

zs, log_det = model.backward(xy)

backward_flow_names = [type(f).__name__ for f in model.flow.flows[::-1]]
print(backward_flow_names, len(zs))

xval = d.sample(128*5)

model.train()
for k in range(2):

    # sample
    x = d.sample(128)

    # train a bit
    zs, prior_logprob, log_det = model(x)
    logprob = prior_logprob + log_det
    loss = -torch.sum(logprob) # NLL
    model.zero_grad()
    loss.backward()
    optimizer.step()

    if k % 10 == 0:
        # vis
        zs, log_det = model.backward(xy)
        print(k, loss.item(), zs[-1].sum().item())
