"""nn.Module's behaviour against torch 2.13: registration, traversal, state_dict and its errors,
modes, hooks, conversions, the containers and printing; parameters named in traces."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from tests._nn_diff import copy_params, same_error


def _net(T):
    nn = T.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.register_buffer("scale", T.ones(3))
            self.register_buffer("tmp", T.zeros(1), persistent=False)

        def forward(self, x):
            return self.fc(x) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Dropout(0.1))
            self.blocks = nn.ModuleList([Block(), Block()])
            self.heads = nn.ModuleDict({"a": nn.Linear(3, 1), "b": nn.Linear(3, 2, bias=False)})
            self.extra = nn.ParameterList([nn.Parameter(T.zeros(2)), nn.Parameter(T.ones(1))])
            self.pd = nn.ParameterDict({"p": nn.Parameter(T.zeros(3))})
            self.shared = self.layers[0]  # the same module twice: de-duplicated
            self.emb = nn.Embedding(4, 2, padding_idx=0)
            self.conv = nn.Conv2d(1, 2, 3, stride=2, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(2)
            self.ln = nn.LayerNorm(3)
            self.pool = nn.MaxPool2d(2)
            self.loss = nn.CrossEntropyLoss(label_smoothing=0.1)
            self.act = nn.ModuleList([nn.GELU(approximate="tanh"), nn.LeakyReLU(0.2), nn.Softmax(dim=1), nn.SiLU()])
            self.same = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x):
            h = self.layers(x)
            for b in self.blocks:
                h = b(h)
            return self.heads["a"](self.ln(h))

    return Net()


def test_traversal_matches_torch():
    a, b = _net(torch), _net(gradviz)
    for what in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        na = [(n, type(m).__name__) for n, m in getattr(a, what)()]
        nb = [(n, type(m).__name__.replace("Tensor", "Tensor")) for n, m in getattr(b, what)()]
        assert [n for n, _ in na] == [n for n, _ in nb], what
    assert [n for n, _ in a.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in b.named_parameters(remove_duplicate=False)]
    assert len(list(a.parameters(recurse=False))) == len(list(b.parameters(recurse=False)))
    assert [type(m).__name__ for m in a.children()] == [type(m).__name__ for m in b.children()]
    assert list(a.state_dict()) == list(b.state_dict())
    assert [p.shape for p in a.parameters()] == [tuple(p.shape) for p in b.parameters()]


def test_repr_matches_torch():
    a, b = _net(torch), _net(gradviz)
    assert repr(b) == repr(a)
    nn_t, nn_g = torch.nn, gradviz.nn
    for make in (lambda nn: nn.Conv1d(2, 3, 3), lambda nn: nn.Unflatten(1, (2, 2)), lambda nn: nn.MSELoss(),
                 lambda nn: nn.BatchNorm1d(3, affine=False), lambda nn: nn.Embedding(3, 2, scale_grad_by_freq=True),
                 lambda nn: nn.AvgPool2d(2), lambda nn: nn.AdaptiveAvgPool2d((1, 1)), lambda nn: nn.Sequential(),
                 lambda nn: nn.LayerNorm(3, elementwise_affine=False), lambda nn: nn.Bilinear(2, 3, 4),
                 lambda nn: nn.ReLU(inplace=True), lambda nn: nn.Identity(), lambda nn: nn.Tanh()):
        assert repr(make(nn_g)) == repr(make(nn_t))
    assert repr(nn_g.Parameter(gradviz.zeros(2))) == repr(nn_t.Parameter(torch.zeros(2)))


def test_state_dict_round_trip_and_errors():
    a, b = _net(torch), _net(gradviz)
    copy_params(a, b)
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    a.eval()
    b.eval()
    np.testing.assert_allclose(b(gradviz.tensor(x)).detach().numpy(), a(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    sd = b.state_dict()
    assert all(not t.requires_grad for t in sd.values())
    assert repr(b.load_state_dict(sd)) == "<All keys matched successfully>"

    def load(T, change):
        lin = T.nn.Linear(3, 2)
        sd = {k: v.detach() for k, v in lin.state_dict().items()}
        change(T, sd)
        return lin.load_state_dict(sd)

    same_error(lambda T: load(T, lambda T, sd: (sd.pop("bias"), sd.update(foo=T.zeros(1)))))
    same_error(lambda T: load(T, lambda T, sd: sd.update(weight=T.zeros(3, 3))))
    same_error(lambda T: load(T, lambda T, sd: sd.update(**{"extra.x": T.zeros(3, 3)})))
    ra = torch.nn.Linear(3, 2).load_state_dict({"weight": torch.zeros(2, 3)}, strict=False)
    rb = gradviz.nn.Linear(3, 2).load_state_dict({"weight": gradviz.zeros(2, 3)}, strict=False)
    assert repr(ra) == repr(rb) and rb.missing_keys == ["bias"]


def test_load_state_dict_missing_raises():
    same_error(lambda T: T.nn.Sequential(T.nn.Linear(2, 2)).load_state_dict({"0.weight": T.zeros(2, 2)}))


def test_attribute_errors():
    def assign_tensor(T):
        T.nn.Linear(2, 2).weight = T.zeros(2, 2)

    def assign_module(T):
        s = T.nn.Sequential(T.nn.Linear(2, 2))
        s._modules  # noqa: B018
        setattr(s, "0", 3)

    same_error(assign_tensor)
    same_error(assign_module)
    same_error(lambda T: T.nn.Linear(2, 2).missing)
    same_error(lambda T: T.nn.Module().register_buffer("a.b", None))
    same_error(lambda T: T.nn.Module()(1))
    same_error(lambda T: T.nn.Dropout(1.5))
    same_error(lambda T: T.nn.Sequential(T.nn.ReLU())[3])


def test_modes_zero_grad_apply_and_conversion():
    for T in (torch, gradviz):
        net = _net(T)
        net.eval()
        assert not any(m.training for m in net.modules())
        net.train()
        assert all(m.training for m in net.modules())
        out = net(T.ones(2, 2)).sum()
        out.backward()
        assert all(p.grad is not None for p in net.layers.parameters())
        net.zero_grad(set_to_none=False)
        assert all(float(p.grad.abs().sum()) == 0 for p in net.layers.parameters())
        net.zero_grad()
        assert all(p.grad is None for p in net.parameters())
        seen = []
        net.apply(lambda m, seen=seen: seen.append(type(m).__name__))
        assert seen[-1] == "Net" and seen[0] == "Linear"
        net.double()
        assert all(p.dtype == T.float64 for p in net.parameters())
        assert net.bn.num_batches_tracked.dtype == T.int64
        net.float()
        assert all(p.dtype == T.float32 for p in net.parameters())
        net.requires_grad_(False)
        assert not any(p.requires_grad for p in net.parameters())
        net.to(T.float64)
        assert all(p.dtype == T.float64 for p in net.parameters())


def test_forward_hooks():
    logs = []
    for T in (torch, gradviz):
        log = []
        lin = T.nn.Linear(2, 2)
        h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        h2 = lin.register_forward_hook(lambda m, a, out, log=log: log.append(("hook", tuple(a[0].shape))) or out + 1)
        lin.register_forward_pre_hook(lambda m, args, log=log: log.append("first"), prepend=True)
        with T.no_grad():
            lin.weight.fill_(1.0)
            lin.bias.fill_(0.0)
        out = lin(T.ones(1, 2))
        log.append(out.tolist())
        h1.remove()
        h2.remove()
        log.append(lin(T.ones(1, 2)).tolist())
        logs.append(log)
    assert logs[0] == logs[1]


def test_sequential_and_lists():
    for T in (torch, gradviz):
        nn = T.nn
        s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        s.append(nn.Tanh())
        assert len(s) == 3 and type(s[-1]).__name__ == "Tanh"
        assert type(s[1:]).__name__ == "Sequential" and len(s[1:]) == 2
        assert list(s[1:]._modules) == ["1", "2"]
        del s[0]
        assert list(s._modules) == ["0", "1"]
        ml = nn.ModuleList([nn.ReLU()])
        ml.append(nn.Tanh())
        ml.extend([nn.Sigmoid()])
        ml.insert(0, nn.Identity())
        assert [type(m).__name__ for m in ml] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
        md = nn.ModuleDict({"a": nn.ReLU()})
        md["b"] = nn.Tanh()
        assert list(md.keys()) == ["a", "b"] and "a" in md
        pl = nn.ParameterList([T.zeros(2)])
        assert type(pl[0]).__name__ == "Parameter"
        pd = nn.ParameterDict({"w": T.zeros(2)})
        assert [n for n, _ in pd.named_parameters()] == ["w"]


def test_default_init_statistics():
    """Default inits draw from torch's bounds (the numbers match torch's once the generators do)."""
    gradviz.manual_seed(0)
    lin = gradviz.nn.Linear(400, 300)
    w = lin.weight.detach().numpy()
    bound = 1 / np.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) gives 1/sqrt(fan_in)
    assert abs(w).max() <= bound and abs(w).max() > 0.99 * bound
    assert abs(lin.bias.detach().numpy()).max() <= bound
    e = gradviz.nn.Embedding(1000, 20, padding_idx=3)
    assert abs(e.weight.detach().numpy().std() - 1) < 0.05 and (e.weight.detach().numpy()[3] == 0).all()
    c = gradviz.nn.Conv2d(4, 8, 3)
    assert abs(c.weight.detach().numpy()).max() <= 1 / np.sqrt(36)
    ln = gradviz.nn.LayerNorm(5)
    assert (ln.weight.detach().numpy() == 1).all() and (ln.bias.detach().numpy() == 0).all()


def test_init_functions_match_torch_fans():
    from gradviz.nn import init as gi

    for shape in ((5, 3), (4, 3, 2, 2), (6, 2, 3)):
        assert gi._calculate_fan_in_and_fan_out(gradviz.zeros(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(*shape))
    for args in (("relu",), ("tanh",), ("leaky_relu", 0.2), ("leaky_relu",), ("selu",), ("conv2d",)):
        assert gi.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)
    same_error(lambda T: T.nn.init.xavier_uniform_(T.zeros(3)))
    same_error(lambda T: T.nn.init.calculate_gain("foo"))
    w = gradviz.zeros(3, 3)
    assert gi.eye_(w).tolist() == torch.eye(3).tolist()
    assert gi.constant_(w, 2.5).tolist() == [[2.5] * 3] * 3
    q = gi.orthogonal_(gradviz.zeros(4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    t = gi.trunc_normal_(gradviz.zeros(1000), std=1.0, a=-1.0, b=1.0).numpy()
    assert t.min() >= -1 and t.max() <= 1 and t.std() > 0.4
    for fn in (gi.xavier_uniform_, gi.xavier_normal_, gi.kaiming_uniform_, gi.kaiming_normal_):
        v = fn(gradviz.zeros(50, 40))
        assert v.numpy().std() > 0 and v.grad_fn is None


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_and_vectors(norm_type):
    results = []
    for T in (torch, gradviz):
        ps = [T.tensor([[3.0, -4.0]], dtype=T.float64, requires_grad=True),
              T.tensor([12.0], dtype=T.float64, requires_grad=True)]
        (ps[0].sum() * 2 + ps[1].sum() * 5).backward()
        total = T.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type)
        vec = T.nn.utils.parameters_to_vector(ps)
        T.nn.utils.vector_to_parameters(vec * 2, ps)
        T.nn.utils.clip_grad_value_(ps, 0.1)
        results.append((float(total), [p.grad.tolist() for p in ps], [p.tolist() for p in ps], vec.tolist()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    assert results[0][1:] == results[1][1:]


def test_pad_sequence():
    for bf in (False, True):
        outs = []
        for T in (torch, gradviz):
            seqs = [T.ones(3, 2), T.ones(1, 2) * 2, T.ones(2, 2) * 3]
            outs.append(T.nn.utils.rnn.pad_sequence(seqs, batch_first=bf, padding_value=-1.0).tolist())
        assert outs[0] == outs[1]


def test_parameters_named_in_traces(tmp_path):
    net = gradviz.nn.Sequential(gradviz.nn.Linear(2, 3), gradviz.nn.ReLU(), gradviz.nn.Linear(3, 1))
    path = tmp_path / "t.gvz"
    with gradviz.trace(str(path)):
        net(gradviz.ones(4, 2)).sum().backward()
    names = {p.name for p in net.parameters()}
    assert names == {"0.weight", "0.bias", "2.weight", "2.bias"}
    text = path.read_bytes()
    for n in names:
        assert n.encode() in text
