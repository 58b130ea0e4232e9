"""torch.autograd.profiler (profile, record_function, EventList) and torch.functional against
torch 2.13: the ops a program calls are the profile's top-level events, named and counted as
torch's; the table has torch's layout; nesting, reentrance and the disabled profile behave as
torch's. Times differ by nature and are only checked to add up."""

from __future__ import annotations

import pytest
import torch

import gradviz


def run(lib, steps=3):
    x = lib.randn(2, 3, requires_grad=True)
    y = lib.rand(2, 3, requires_grad=True)
    z = lib.ones(2, 3, requires_grad=True)
    with lib.autograd.profiler.profile() as prof:
        for _ in range(steps):
            z = (z / x) * y
        w = lib.sin(z) + z * 2
        with lib.autograd.profiler.record_function("my_block"):
            w = w.exp()
        lib.nn.functional.relu(w)
    return prof


def top_level(prof):
    return [e.name for e in prof.function_events if e.cpu_parent is None]


def test_top_level_events_are_torchs():
    assert top_level(run(gradviz)) == top_level(run(torch))


def test_key_averages_count_as_torch():
    def counts(prof):
        top = set(top_level(prof))
        return {e.key: e.count for e in prof.key_averages() if e.key in top}

    assert counts(run(gradviz, 5)) == counts(run(torch, 5))


def test_table_layout_is_torchs():
    t_text = run(torch).key_averages().table(sort_by="self_cpu_time_total")
    g_text = run(gradviz).key_averages().table(sort_by="self_cpu_time_total")
    assert g_text.endswith("\n") and t_text.endswith("\n")
    t, g = t_text.splitlines(), g_text.splitlines()
    # the title row and the rules around it, column by column (the name column's width follows
    # the longest name, which torch's internal ops can make longer)
    assert g[1].split() == t[1].split()
    assert [len(c) for c in g[0].split()][1:] == [len(c) for c in t[0].split()][1:]
    assert g[-1].startswith("Self CPU time total: ") and t[-1].startswith("Self CPU time total: ")
    assert g[-2] == g[0] == g[2]
    rows = g[3:-2]
    assert {r.split()[0] for r in rows} >= {"aten::div", "aten::mul", "my_block"}
    assert all(r.endswith("  ") for r in rows)
    # sorted by self time, descending
    avgs = sorted(run(gradviz).key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    assert all(a.self_cpu_time_total >= b.self_cpu_time_total for a, b in zip(avgs, avgs[1:]))


def test_times_add_up():
    prof = run(gradviz)
    for e in prof.function_events:
        assert e.cpu_time_total >= 0
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - sum(c.cpu_time_total for c in e.cpu_children))
    total = prof.key_averages().total_average()
    assert total.count == len(prof.function_events)
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in prof.function_events))


def test_record_function_children():
    def children(prof):
        block = next(e for e in prof.function_events if e.name == "my_block")
        return [c.name for c in block.cpu_children]

    assert children(run(gradviz)) == children(run(torch)) == ["aten::exp"]


def test_empty_table_and_time_format():
    assert gradviz.autograd.profiler.EventList().table() == torch.autograd.profiler.EventList().table() == ""
    from torch.autograd.profiler_util import _format_time

    from gradviz.autograd.profiler import _format_time as gv_format_time

    for us in (0.0, 12.3456, 999.9, 1000.0, 4567.8, 2_500_000.0):
        assert gv_format_time(us) == _format_time(us)


def test_ops_are_unwrapped_after_the_profile():
    before = (gradviz.Tensor.__mul__, gradviz.sin, gradviz.nn.functional.relu)
    run(gradviz)
    assert (gradviz.Tensor.__mul__, gradviz.sin, gradviz.nn.functional.relu) == before


def test_gradients_unchanged_inside_a_profile():
    x = gradviz.randn(3, requires_grad=True)
    with gradviz.autograd.profiler.profile():
        y = (x * 2).sin().sum()
    y.backward()
    assert y.grad_fn.name() == "SumBackward0"
    assert gradviz.allclose(x.grad, 2 * (x * 2).cos())


@pytest.mark.parametrize("lib", [torch, gradviz], ids=["torch", "gradviz"])
def test_not_reentrant(lib):
    prof = lib.autograd.profiler.profile()
    with prof:
        with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
            with prof:
                pass


@pytest.mark.parametrize("lib", [torch, gradviz], ids=["torch", "gradviz"])
def test_disabled_profile_has_no_events(lib):
    prof = lib.autograd.profiler.profile(enabled=False)
    with prof:
        lib.ones(2).sin()
    with pytest.raises(AttributeError, match="_function_events"):
        _ = prof.function_events


def test_torch_functional_module():
    import torch.functional as tf

    with gradviz.as_torch() as gtorch:
        import torch.functional as gf

        assert gf.einsum is gtorch.einsum and gf.split is gtorch.split
        for name in gf.__all__:
            assert name in tf.__all__
        with pytest.raises(AttributeError, match="gradviz has no torch.functional.stft"):
            _ = gf.stft
