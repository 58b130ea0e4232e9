"""torch.optim.swa_utils against torch: SWA and EMA averages (avg_fn, multi_avg_fn, use_buffers)
of a model trained the same way on both engines, update_bn's statistics, SWALR's learning rates
(cos and linear, 0 and several annealing epochs, one swa_lr per group), state_dict round trips,
and the errors; and the torch.nn.modules.batchnorm / torch.nn.modules.utils paths programs use."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz

RNG = np.random.default_rng(0)
X = [RNG.standard_normal((6, 4)).astype(np.float32) for _ in range(4)]
Y = [RNG.standard_normal((6, 2)).astype(np.float32) for _ in range(4)]


def _model(T: Any) -> Any:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    if T is torch:
        return ref
    m = gradviz.nn.Sequential(gradviz.nn.Linear(4, 5), gradviz.nn.BatchNorm1d(5), gradviz.nn.ReLU(),
                              gradviz.nn.Linear(5, 2))
    m.load_state_dict({k: gradviz.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    return m


def _plain(sd: dict) -> dict:
    return {k: np.asarray(v.detach().numpy() if hasattr(v, "detach") else v).tolist() for k, v in sd.items()}


def _train_and_average(T: Any, how: str) -> Any:
    S = T.optim.swa_utils
    model = _model(T)
    kwargs: dict[str, Any] = {
        "swa": {},
        "ema_multi_buffers": {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9), "use_buffers": True},
        "ema_fn": {"avg_fn": S.get_ema_avg_fn(0.8)},
        "swa_multi": {"multi_avg_fn": S.get_swa_multi_avg_fn()},
        "swa_fn": {"avg_fn": S.get_swa_avg_fn()},
    }[how]
    avg = S.AveragedModel(model, **kwargs)
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = S.SWALR(opt, swa_lr=0.05, anneal_epochs=2)
    lrs = []
    for x, y in zip(X, Y):
        loss = ((model(T.tensor(x)) - T.tensor(y)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg.update_parameters(model)
        sched.step()
        lrs.append(sched.get_last_lr())
    before_bn = _plain(avg.state_dict())
    S.update_bn([(T.tensor(x), 0) for x in X], avg)
    out = avg(T.tensor(X[0])).detach().numpy().tolist()
    return lrs, before_bn, _plain(avg.state_dict()), out, avg.training


@pytest.mark.parametrize("how", ["swa", "ema_multi_buffers", "ema_fn", "swa_multi", "swa_fn"])
def test_averages_equal_torchs(how: str) -> None:
    g, t = _train_and_average(gradviz, how), _train_and_average(torch, how)
    np.testing.assert_allclose(g[0], t[0], rtol=1e-12)
    assert g[4] == t[4]
    for a, b in zip(g[1:4], t[1:4]):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                np.testing.assert_allclose(np.asarray(a[k], dtype=np.float64), np.asarray(b[k], dtype=np.float64),
                                           rtol=1e-6, atol=1e-7, err_msg=k)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 1, 3])
def test_swalr_lrs_and_state_equal_torchs(strategy: str, epochs: int) -> None:
    def run(T: Any) -> Any:
        a, b = T.nn.Parameter(T.zeros(2)), T.nn.Parameter(T.zeros(1))
        opt = T.optim.SGD([{"params": [a], "lr": 0.5}, {"params": [b], "lr": 0.2}], lr=0.1)
        s = T.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
        out = [s.get_last_lr()]
        for _ in range(5):
            opt.step()
            s.step()
            out.append(s.get_last_lr())
        state = s.state_dict()
        s2 = T.optim.swa_utils.SWALR(opt, swa_lr=0.3)
        s2.load_state_dict(state)
        s2.step()
        return out, sorted(state), [g["swa_lr"] for g in opt.param_groups], s2.get_last_lr()

    g, t = run(gradviz), run(torch)
    assert g[1] == t[1] and g[2] == t[2]
    np.testing.assert_allclose(g[0], t[0], rtol=1e-12)
    np.testing.assert_allclose(g[3], t[3], rtol=1e-12)


def _error(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    return "", ""


@pytest.mark.parametrize("case", ["bad strategy", "negative epochs", "float epochs", "decay", "ema decay",
                                  "both fns", "swa_lr list length"])
def test_errors_equal_torchs(case: str) -> None:
    def run(T: Any) -> tuple[str, str]:
        p = T.nn.Parameter(T.zeros(1))
        opt = T.optim.SGD([p], lr=0.1)
        S = T.optim.swa_utils
        return _error({
            "bad strategy": lambda: S.SWALR(opt, swa_lr=0.1, anneal_strategy="exp"),
            "negative epochs": lambda: S.SWALR(opt, swa_lr=0.1, anneal_epochs=-1),
            "float epochs": lambda: S.SWALR(opt, swa_lr=0.1, anneal_epochs=2.0),
            "decay": lambda: S.get_ema_multi_avg_fn(1.5),
            "ema decay": lambda: S.get_ema_avg_fn(-0.1),
            "both fns": lambda: S.AveragedModel(T.nn.Linear(1, 1), avg_fn=S.get_swa_avg_fn(),
                                                multi_avg_fn=S.get_swa_multi_avg_fn()),
            "swa_lr list length": lambda: S.SWALR(opt, swa_lr=[0.1, 0.2]),
        }[case])

    assert run(gradviz) == run(torch)


def test_integer_buffers_and_update_bn_without_batchnorm() -> None:
    def run(T: Any) -> Any:
        T.manual_seed(0)
        m = T.nn.Linear(2, 2)
        m.register_buffer("count", T.tensor([3, 7]))
        avg = T.optim.swa_utils.AveragedModel(m, use_buffers=True)
        for k in range(3):
            with T.no_grad():
                m.weight.add_(1.0)
                m.count.add_(k + 1)
            avg.update_parameters(m)
        T.optim.swa_utils.update_bn([T.ones(1, 2)], avg)  # no BatchNorm: nothing to do
        return _plain(avg.state_dict()), str(avg.n_averaged.dtype)

    assert run(gradviz) == run(torch)


def test_module_paths_equal_torchs() -> None:
    import torch.nn.modules.batchnorm as tb
    import torch.nn.modules.utils as tu

    import gradviz.nn.modules.batchnorm as gb
    import gradviz.nn.modules.utils as gu

    assert sorted(gb.__all__) == sorted(tb.__all__)
    assert isinstance(gradviz.nn.BatchNorm2d(3), gb._BatchNorm)
    assert isinstance(gradviz.nn.LazyBatchNorm1d(), gb._BatchNorm)
    assert not isinstance(gradviz.nn.InstanceNorm2d(3), gb._BatchNorm) and isinstance(gradviz.nn.InstanceNorm2d(3),
                                                                                         gb._NormBase)
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for v in (3, (1, 2), [4, 5, 6]):
            assert getattr(gu, name)(v) == getattr(tu, name)(v)
        assert getattr(gu, name).__name__ == getattr(tu, name).__name__
    assert gu._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert gu._list_with_default([None, 4], [7, 8, 9]) == tu._list_with_default([None, 4], [7, 8, 9])
    assert gu._list_with_default(5, [1]) == tu._list_with_default(5, [1])
    short = [3, 4]
    assert _error(lambda: gu._list_with_default([1, 2], short)) == _error(lambda: tu._list_with_default([1, 2], short))
    for U in (gu, tu):
        sd = {"module.a": 1, "module.b.c": 2, "d": 3}
        U.consume_prefix_in_state_dict_if_present(sd, "module.")
        assert sd == {"a": 1, "b.c": 2, "d": 3}
