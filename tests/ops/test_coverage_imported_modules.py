"""Modules programs import even when they never call them (issue 34 item 6): torch.hub,
torch.utils.model_zoo, torch.multiprocessing, torch.utils.benchmark, torch.version,
torch._inductor.config and torch.backends.*: importable under gradviz, what works offline working
as torch's does, the rest failing with one line."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap

import pytest
import torch

import gradviz

BACKENDS = ["cpu", "cuda", "cudnn", "cusparselt", "kleidiai", "mha", "mkl", "mkldnn", "mps", "nnpack", "openmp",
            "opt_einsum", "quantized", "xnnpack"]
MODULES = ["torch.hub", "torch.utils.model_zoo", "torch.multiprocessing", "torch.utils.benchmark", "torch.version",
           "torch._inductor.config", *(f"torch.backends.{b}" for b in BACKENDS)]


@pytest.mark.parametrize("name", MODULES)
def test_importable_as_torch(name):
    with gradviz.as_torch():
        mod = importlib.import_module(name)
        assert mod.__name__ == name
    assert sys.modules["torch"] is torch


def test_backend_flags_answer_as_torchs_cpu_build():
    import torch.backends.cusparselt
    import torch.backends.kleidiai
    import torch.backends.mha
    import torch.backends.opt_einsum
    import torch.backends.quantized
    import torch.backends.xnnpack

    tb, gb = torch.backends, gradviz.backends
    assert gb.opt_einsum.is_available() is tb.opt_einsum.is_available() is False  # no opt_einsum package here
    assert (gb.opt_einsum.enabled, gb.opt_einsum.strategy) == (tb.opt_einsum.enabled, tb.opt_einsum.strategy)
    assert gb.xnnpack.enabled == tb.xnnpack.enabled
    assert gb.quantized.engine == tb.quantized.engine
    assert sorted(gb.quantized.supported_engines) == sorted(tb.quantized.supported_engines)
    assert gb.mha.get_fastpath_enabled() == tb.mha.get_fastpath_enabled()
    assert (gb.cusparselt.is_available(), gb.cusparselt.version()) == (tb.cusparselt.is_available(), None)
    assert gb.kleidiai.is_available() == tb.kleidiai.is_available()
    assert (gb.mkl.VERBOSE_ON, gb.mkl.VERBOSE_OFF) == (tb.mkl.VERBOSE_ON, tb.mkl.VERBOSE_OFF)
    with gb.mkl.verbose(gb.mkl.VERBOSE_ON):
        pass
    assert gb.mkldnn.enabled == tb.mkldnn.enabled
    with gb.mkldnn.flags(enabled=False):
        assert gb.mkldnn.enabled is False
    assert gb.mkldnn.enabled is True
    gb.mha.set_fastpath_enabled(False)
    assert gb.mha.get_fastpath_enabled() is False
    gb.mha.set_fastpath_enabled(True)
    with gb.nnpack.flags(enabled=True):
        pass


def test_version_and_inductor_config():
    import torch._inductor.config as tconfig

    from gradviz import version
    from gradviz._inductor import config

    assert version.__version__.split("+")[0] == torch.version.__version__.split("+")[0]
    assert (version.cuda, version.hip, version.debug) == (None, None, False)
    for name in ("coordinate_descent_tuning", "fx_graph_cache", "freezing", "max_autotune", "epilogue_fusion",
                 "conv_1x1_as_mm", "force_fuse_int_mm_with_mul", "use_mixed_mm", "shape_padding"):
        assert getattr(config, name) == getattr(tconfig, name), name
    assert config.triton.unique_kernel_names == tconfig.triton.unique_kernel_names
    code = "import torch._inductor.config\ntorch._inductor.config.coordinate_descent_tuning = True\n"
    with gradviz.as_torch():
        exec(code, {})
    assert config.coordinate_descent_tuning is True
    config.coordinate_descent_tuning = False


def _state(T):
    T.manual_seed(0)
    return T.nn.Linear(3, 2).state_dict()


def test_load_state_dict_from_url_takes_the_cached_file_as_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    assert gradviz.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "home" / "hub")
    ckpt = tmp_path / "home" / "hub" / "checkpoints"
    ckpt.mkdir(parents=True)
    torch.save(_state(torch), ckpt / "lin-0123.pth")  # as torch.hub left it after a download
    url = "https://example.invalid/models/lin-0123.pth"
    want = torch.hub.load_state_dict_from_url(url)
    got = gradviz.hub.load_state_dict_from_url(url)
    assert list(got) == list(want)
    for k in want:
        assert got[k].tolist() == want[k].tolist() and str(got[k].dtype) == str(want[k].dtype)
    assert gradviz.utils.model_zoo.load_url is gradviz.hub.load_state_dict_from_url
    m = gradviz.nn.Linear(3, 2)
    m.load_state_dict(got)
    assert m.weight.tolist() == want["weight"].tolist()


def test_load_state_dict_from_a_file_url_copies_it_as_torch(tmp_path, capsys):
    src = tmp_path / "src" / "w.pt"
    src.parent.mkdir()
    torch.save(_state(torch), src)
    url = src.as_uri()
    want = torch.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "t"))
    got = gradviz.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "g"))
    assert (tmp_path / "g" / "w.pt").exists() and {k: v.tolist() for k, v in got.items()} == {
        k: v.tolist() for k, v in want.items()
    }
    out = capsys.readouterr().out
    assert out.count("Downloading:") == 2  # both say so, in the same words up to the directory


def test_what_needs_the_network_fails_with_one_line(tmp_path):
    with pytest.raises(RuntimeError) as info:
        gradviz.hub.load_state_dict_from_url("https://example.invalid/m.pth", model_dir=str(tmp_path))
    msg = str(info.value)
    assert "\n" not in msg and "no network" in msg and os.path.join(str(tmp_path), "m.pth") in msg
    with pytest.raises(RuntimeError, match="no network"):
        gradviz.hub.load("someone/somerepo", "model")
    with pytest.raises(RuntimeError, match="no network"):
        gradviz.hub.download_url_to_file("https://example.invalid/x", str(tmp_path / "x"))


def test_hub_load_from_a_local_directory_as_torch(tmp_path):
    (tmp_path / "hubconf.py").write_text(textwrap.dedent("""
        dependencies = []

        def tiny(scale=1.0):
            '''A number, scaled.'''
            return 2.0 * scale
    """))
    d = str(tmp_path)
    assert gradviz.hub.load(d, "tiny", scale=3.0, source="local") == torch.hub.load(d, "tiny", scale=3.0,
                                                                                      source="local")
    assert gradviz.hub.list(d) == ["tiny"]
    assert gradviz.hub.help(d, "tiny") == "A number, scaled."


def _child(i, path):
    with open(f"{path}/{i}", "w") as fh:
        fh.write(str(i * 10))


def _fail(i):
    raise ValueError(f"rank {i} failed")


@pytest.mark.slow
def test_multiprocessing_spawn_and_sharing_strategy(tmp_path):
    import torch.multiprocessing as tmp

    from gradviz import multiprocessing as gmp

    assert gmp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert gmp.get_sharing_strategy() == tmp.get_sharing_strategy()
    assert gmp.Queue is not None and gmp.cpu_count() >= 1
    gmp.spawn(_child, args=(str(tmp_path),), nprocs=2, start_method="fork")
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["0", "10"]
    with pytest.raises(gmp.ProcessRaisedException, match="rank 0 failed"):
        gmp.spawn(_fail, nprocs=1, start_method="fork")


def test_benchmark_timer_measures():
    from gradviz.utils import benchmark

    x = gradviz.ones(4)
    m = benchmark.Timer("x * 2", globals={"x": x}, label="mul", description="gradviz").timeit(50)
    assert m.number_per_run == 50 and len(m.times) == 1 and m.median > 0 and m.label == "mul"
    m2 = benchmark.Timer("x + 1", globals={"x": x}).blocked_autorange(min_run_time=0.01)
    assert len(m2.times) >= 3 and m2.mean > 0
    assert "us" in str(benchmark.Compare([m, m2]))
