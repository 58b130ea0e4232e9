"""torch.cuda, backends, accelerator, amp, distributed, nn.parallel, onnx, compile and
distributions under gradviz, against torch 2.13 on this (GPU-less) machine."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch

import gradviz

pytestmark = pytest.mark.skipif(torch.cuda.is_available() or gradviz.cuda.is_available(),
                                reason="these check the answers of a machine without a GPU")


def same_value(expr: str) -> None:
    assert eval(expr, {"m": gradviz}) == eval(expr, {"m": torch}), expr


@pytest.mark.parametrize("expr", [
    "m.cuda.is_available()", "m.cuda.device_count()", "m.cuda.is_initialized()", "m.cuda.manual_seed(3)",
    "m.cuda.manual_seed_all(3)", "m.cuda.seed()", "m.cuda.memory_allocated()", "m.cuda.max_memory_allocated()",
    "m.cuda.empty_cache()", "m.cuda.is_bf16_supported()",
    "m.accelerator.is_available()", "m.accelerator.current_accelerator()", "m.accelerator.device_count()",
    "m.backends.cudnn.enabled", "m.backends.cudnn.benchmark", "m.backends.cudnn.deterministic",
    "m.backends.cudnn.allow_tf32", "m.backends.cudnn.is_available()", "m.backends.cudnn.version()",
    "m.backends.mps.is_available()", "m.backends.mps.is_built()", "m.backends.cuda.matmul.allow_tf32",
    "m.backends.cuda.is_built()", "m.backends.cuda.flash_sdp_enabled()",
    "m.distributed.is_initialized()", "m.onnx.is_in_onnx_export()", "m.is_autocast_enabled()",
])
def test_answers_match_torch_without_a_gpu(expr):
    same_value(expr)


def test_distributed_is_not_available():
    assert gradviz.distributed.is_available() is False  # torch's CPU wheel has it; gradviz never does


@pytest.mark.parametrize("expr", [
    "m.cuda.synchronize()", "m.cuda.current_device()", "m.cuda.get_device_name()", "m.cuda.get_device_capability()",
    "m.cuda.get_device_properties(0)", "m.cuda.init()", "m.cuda.initial_seed()",
])
def test_cuda_calls_needing_a_device_raise_torchs_type(expr):
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        eval(expr, {"m": torch})
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        eval(expr, {"m": gradviz})


@pytest.mark.parametrize("expr", [
    "m.accelerator.current_device_index()", "m.accelerator.set_device_index(0)", "m.accelerator.synchronize()",
    "m.distributed.get_rank()", "m.distributed.get_world_size()", "m.distributed.barrier()",
    "m.amp.autocast(device_type='xyz')",
])
def test_errors_match_torch(expr):
    with pytest.raises(Exception) as t_err:
        eval(expr, {"m": torch})
    with pytest.raises(type(t_err.value)) as g_err:
        eval(expr, {"m": gradviz})
    assert str(g_err.value) == str(t_err.value)


@pytest.mark.parametrize("expr", ["m.zeros(2, device='cuda')", "m.zeros(2).to('cuda')", "m.randn(2, device='cuda')",
                                  "m.tensor([1.0], device='cuda:0')"])
def test_cuda_tensors_without_a_gpu_fail_as_torch(expr):
    assert str(gradviz.device("cuda")) == "cuda:0"  # naming one is fine, as in torch
    for m in (torch, gradviz):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            eval(expr, {"m": m})
    with pytest.raises(RuntimeError, match="cupy"):  # gradviz's says what is missing
        eval(expr, {"m": gradviz})


def test_parallel_wrappers():
    import gradviz.nn.parallel as gp

    with pytest.raises(ValueError) as t_err:
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError) as g_err:
        gp.DistributedDataParallel(object())
    assert str(g_err.value) == str(t_err.value)
    dp = gp.DataParallel(lambda x: x * 2)
    assert dp.device_ids == torch.nn.parallel.DataParallel(torch.nn.Linear(2, 2)).device_ids == []
    assert dp(gradviz.ones(2)).tolist() == [2.0, 2.0]


def test_submodules_import_as_torchs_do():
    for name in ["cuda", "backends", "backends.cudnn", "backends.mps", "backends.cuda", "accelerator", "amp",
                 "distributed", "nn.parallel", "onnx", "distributions"]:
        importlib.import_module(f"gradviz.{name}")
        importlib.import_module(f"torch.{name}")


def test_onnx_export_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="gradviz has no ONNX exporter"):
        gradviz.onnx.export(None, (), "x.onnx")


def test_compile_returns_its_argument_and_says_so_once(capsys):
    import gradviz._compile as c

    c._said = False

    def f(x):
        return x + 1

    assert gradviz.compile(f) is f
    assert gradviz.compile(mode="max-autotune")(f) is f
    err = capsys.readouterr().err
    assert err.count("gradviz has no compiler") == 1


def test_amp_disabled_changes_nothing():
    x = gradviz.ones(2, 2)
    with gradviz.autocast("cpu", enabled=False):
        assert (x @ x).dtype is gradviz.float32
    with gradviz.amp.autocast("cpu", enabled=False):
        pass
    for m in (torch, gradviz):
        s = m.amp.GradScaler(enabled=False)
        t = m.tensor(2.0)
        assert s.scale(t) is t and s.get_scale() == 1.0 and not s.is_enabled() and s.state_dict() == {}


def test_cpu_autocast_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="gradviz has no autocast"):
        with gradviz.autocast("cpu"):
            pass


def test_cuda_amp_without_gpu_disables_itself_with_torchs_warnings():
    for m in (torch, gradviz):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = m.amp.GradScaler("cuda")
            with m.amp.autocast("cuda"):
                pass
        msgs = [str(x.message) for x in w]
        assert "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling." in msgs
        assert "CUDA is not available or torch_xla is imported. Disabling autocast." in msgs
        assert not s.is_enabled()


def test_enabled_grad_scaler_matches_torch_on_cpu():
    class Opt:  # the optimizer surface GradScaler uses
        def __init__(self, params):
            self.param_groups = [{"params": params}]
            self.steps = 0

        def step(self):
            self.steps += 1

    results = []
    for m in (torch, gradviz):
        w = m.tensor([1.0, 2.0], requires_grad=True)
        opt = Opt([w])
        s = m.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
        for bad in (False, False, True, False):
            w.grad = None
            loss = (w * (float("inf") if bad else 3.0)).sum()
            s.scale(loss).backward()
            s.step(opt)
            s.update()
            results.append((s.get_scale(), opt.steps, w.grad.tolist()))
    half = len(results) // 2
    assert results[:half] == results[half:]


def test_distributions_sample_as_torch_and_agree_on_log_prob_and_entropy():
    import gradviz.distributions as gd

    for seed in (0, 1, 42, 2**31 - 1):
        gradviz.manual_seed(seed)
        torch.manual_seed(seed)
        p = [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]
        pairs = [
            (gd.Categorical(probs=gradviz.tensor(p)), torch.distributions.Categorical(probs=torch.tensor(p))),
            (gd.Categorical(logits=gradviz.tensor(p)), torch.distributions.Categorical(logits=torch.tensor(p))),
            (gd.Normal(gradviz.tensor([0.0, 1.0]), gradviz.tensor([1.0, 2.0])),
             torch.distributions.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))),
            (gd.Normal(0.5, 2.0), torch.distributions.Normal(0.5, 2.0)),
            (gd.Bernoulli(probs=gradviz.tensor([0.2, 0.9])),
             torch.distributions.Bernoulli(probs=torch.tensor([0.2, 0.9]))),
            (gd.Bernoulli(logits=gradviz.tensor([0.2, -3.0])),
             torch.distributions.Bernoulli(logits=torch.tensor([0.2, -3.0]))),
        ]
        for g, t in pairs:
            for shape in ((), (5,), (17, 2)):
                gs, ts = g.sample(shape), t.sample(shape)
                assert np.array_equal(gs.numpy(), ts.numpy()), (type(g).__name__, shape)
                np.testing.assert_allclose(g.log_prob(gs).numpy(), t.log_prob(ts).numpy(), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(g.entropy().numpy(), t.entropy().numpy(), rtol=1e-6)
        assert np.array_equal(pairs[2][0].rsample((3,)).numpy(), pairs[2][1].rsample((3,)).numpy())


def test_distribution_gradients_match_torch():
    import gradviz.distributions as gd

    grads = []
    for m, D in ((torch, torch.distributions), (gradviz, gd)):
        logits = m.tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 1.0]], requires_grad=True)
        loc = m.tensor([0.3, -0.2], requires_grad=True)
        scale = m.tensor([1.5, 0.5], requires_grad=True)
        pl = m.tensor([0.1, -2.0], requires_grad=True)
        c, n, b = D.Categorical(logits=logits), D.Normal(loc, scale), D.Bernoulli(logits=pl)
        total = (c.log_prob(m.tensor([1, 2])).sum() + c.entropy().sum() + n.log_prob(m.tensor([0.0, 1.0])).sum()
                 + n.entropy().sum() + b.log_prob(m.tensor([1.0, 0.0])).sum() + b.entropy().sum())
        total.backward()
        grads.append([t.grad.numpy() for t in (logits, loc, scale, pl)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_cuda_amp_deprecated_spellings_warn_as_torch():
    import torch.cuda.amp as tamp

    import gradviz.cuda.amp as gamp

    for mod in (tamp, gamp):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = mod.GradScaler()
            mod.autocast()
        msgs = {str(x.message) for x in w if x.category is FutureWarning}
        assert msgs == {
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` "
            "instead.",
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` "
            "instead.",
        }
        assert not s.is_enabled()
