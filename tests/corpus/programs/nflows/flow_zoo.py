# Source: github.com/karpathy/pytorch-normalizing-flows nflib1.ipynb (and nflib/flows.py,
#   nflib/spline_flows.py, nflib/made.py, nflib/nets.py) @ b60e119b37be10ce2930ef9fa17e58686aaf2b3d
# Changes: the notebook's code cells as a script (tests/corpus/nb2py.py), plots and the autoreload
#   magics dropped; sklearn's make_moons (not installed) by the same two half-moons made with numpy;
#   the notebook's other model choices (its commented-out lines: RealNVP, NICE, SlowMAF, MAF, IAF
#   with ActNorms, Glow) each built with the MultivariateNormal prior of its commented line and
#   trained 2 steps (not 1000) on the mixture of gaussians, then inverted and sampled.
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

d = DatasetMixture()

prior = MultivariateNormal(torch.zeros(2), torch.eye(2))

def realnvp():
    return [AffineHalfFlow(dim=2, parity=i%2) for i in range(9)]

def nice():
    flows = [AffineHalfFlow(dim=2, parity=i%2, scale=False) for i in range(4)]
    flows.append(AffineConstantFlow(dim=2, shift=False))
    return flows

def slowmaf():
    return [SlowMAF(dim=2, parity=i%2) for i in range(4)]

def maf():
    return [MAF(dim=2, parity=i%2) for i in range(4)]

def iaf_actnorm():
    flows = [IAF(dim=2, parity=i%2) for i in range(3)]
    norms = [ActNorm(dim=2) for _ in flows]
    return list(itertools.chain(*zip(norms, flows)))

def glow():
    flows = [Invertible1x1Conv(dim=2) for i in range(3)]
    norms = [ActNorm(dim=2) for _ in flows]
    couplings = [AffineHalfFlow(dim=2, parity=i%2, nh=32) for i in range(len(flows))]
    return list(itertools.chain(*zip(norms, flows, couplings))) # append a coupling layer after each 1x1

for make in [realnvp, nice, slowmaf, maf, iaf_actnorm, glow]:
    model = NormalizingFlowModel(prior, make())
    optimizer = optim.Adam(model.parameters(), lr=1e-4, weight_decay=1e-5) # todo tune WD
    print(make.__name__, "number of params: ", sum(p.numel() for p in model.parameters()))

    model.train()
    for k in range(2):
        x = d.sample(128)

        zs, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -torch.sum(logprob) # NLL

        model.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())

    model.eval()
    x = d.sample(128)
    zs, prior_logprob, log_det = model(x)
    zs = model.sample(128)
    zs, log_det = model.backward(x)
    print(zs[-1].sum().item(), log_det.sum().item())
