"""gradviz's random numbers against torch 2.13's CPU generator: exact values, bit for bit.

Every stream is checked for seeds 0, 1, 42 and 2**31-1, sizes 1, 7, 16, 17 and 1000 (16 and 17
cross torch's switch to its block normal fill), float32 and float64, and two calls in a row
(the generator's state must carry over exactly, including the cached normal sample).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import gradviz

SEEDS = [0, 1, 42, 2**31 - 1]
SIZES = [1, 7, 16, 17, 1000]
DTYPES = [(torch.float32, gradviz.float32), (torch.float64, gradviz.float64)]


def same(a, b) -> None:
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = np.asarray(b.detach().numpy() if isinstance(b, torch.Tensor) else b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.array_equal(a, b, equal_nan=True), f"{int((a != b).sum())} of {a.size} differ"


def both(seed: int, g_fn, t_fn=None, calls: int = 2) -> None:
    """Seed both generators, then compare ``calls`` successive calls (one function given: the
    same code, run with gradviz and with torch as its module argument)."""
    t_fn = t_fn or g_fn
    gradviz.manual_seed(seed)
    torch.manual_seed(seed)
    for _ in range(calls):
        same(g_fn(gradviz), t_fn(torch))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dn", ["float32", "float64"])
def test_float_streams(seed, n, dn):
    both(seed, lambda m: m.rand(n, dtype=getattr(m, dn)))
    both(seed, lambda m: m.randn(n, dtype=getattr(m, dn)))
    both(seed, lambda m: m.normal(0.5, 2.0, (n,), dtype=getattr(m, dn)))
    both(seed, lambda m: m.empty(n, dtype=getattr(m, dn)).uniform_(-0.25, 3.0))
    both(seed, lambda m: m.empty(n, dtype=getattr(m, dn)).normal_(-1.0, 0.3))
    both(seed, lambda m: m.empty(n, dtype=getattr(m, dn)).exponential_(1.7))
    both(seed, lambda m: m.empty(n, dtype=getattr(m, dn)).cauchy_(0.5, 2.0))
    both(seed, lambda m: m.empty(n, dtype=getattr(m, dn)).log_normal_(0.2, 0.5))
    both(seed, lambda m: m.empty(n, dtype=getattr(m, dn)).geometric_(0.3))
    both(seed, lambda m: m.empty(2, n, dtype=getattr(m, dn)).t().normal_(1.0, 0.5))  # not contiguous: scalar path


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_integer_streams(seed, n):
    both(seed, lambda m: m.randint(0, 10, (n,)))
    both(seed, lambda m: m.randint(-5, 2**40, (n,)), lambda m: m.randint(-5, 2**40, (n,)))  # 64-bit draws
    both(seed, lambda m: m.randint(7, size=(n,)))
    both(seed, lambda m: m.randperm(n))
    both(seed, lambda m: m.empty(n, dtype=m.float64).random_(3, 9))
    both(seed, lambda m: m.empty(n, dtype=m.int64).random_())
    both(seed, lambda m: m.empty(n).random_())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", DTYPES, ids=["float32", "float64"])
def test_bernoulli_and_dropout_masks(seed, n, dt):
    tdt, gdt = dt
    p = np.linspace(0.05, 0.95, n)
    both(seed, lambda m: m.bernoulli(m.tensor(p, dtype=gdt if m is gradviz else tdt)),
         lambda m: m.bernoulli(m.tensor(p, dtype=tdt)))
    both(seed, lambda m: m.empty(n, dtype=gdt).bernoulli_(0.3), lambda m: m.empty(n, dtype=tdt).bernoulli_(0.3))
    both(seed, lambda m: m.bernoulli(m.zeros(n, dtype=gdt), 0.6), lambda m: m.bernoulli(m.zeros(n, dtype=tdt), 0.6))
    # torch's CPU dropout: input * empty_like(input).bernoulli_(1 - p).div_(1 - p)
    from gradviz.random._api import dropout_noise

    x_np = np.linspace(-1, 1, n * 3).reshape(3, n)
    both(seed, lambda m: gradviz.tensor(x_np, dtype=gdt) * dropout_noise(gradviz.tensor(x_np, dtype=gdt), 0.4),
         lambda m: torch.nn.functional.dropout(torch.tensor(x_np, dtype=tdt), 0.4, training=True))
    x4 = np.ones((2, 3, 2, 2))
    both(seed, lambda m: gradviz.tensor(x4, dtype=gdt) * dropout_noise(gradviz.tensor(x4, dtype=gdt), 0.5, True),
         lambda m: torch.nn.functional.dropout2d(torch.tensor(x4, dtype=tdt), 0.5, training=True), calls=1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 16, 17, 1000])
def test_multinomial(seed, dt, n):
    tdt, gdt = dt
    probs = np.abs(np.sin(np.arange(1, 2 * 23 + 1))).reshape(2, 23)
    k = min(n, 23)
    both(seed, lambda m: m.multinomial(gradviz.tensor(probs, dtype=gdt), n, True),
         lambda m: m.multinomial(torch.tensor(probs, dtype=tdt), n, True))
    both(seed, lambda m: m.multinomial(gradviz.tensor(probs, dtype=gdt), k),
         lambda m: m.multinomial(torch.tensor(probs, dtype=tdt), k))
    both(seed, lambda m: m.multinomial(gradviz.tensor(probs[0], dtype=gdt), 1, True),
         lambda m: m.multinomial(torch.tensor(probs[0], dtype=tdt), 1, True))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", DTYPES, ids=["float32", "float64"])
def test_normal_overloads(seed, dt):
    tdt, gdt = dt
    mean = np.linspace(-2, 2, 17)
    std = np.linspace(0.1, 3, 17)

    def t(m, a):
        return m.tensor(a, dtype=gdt if m is gradviz else tdt)

    both(seed, lambda m: m.normal(t(m, mean), 2.0))
    both(seed, lambda m: m.normal(0.5, t(m, std)))
    both(seed, lambda m: m.normal(t(m, mean), t(m, std)))
    both(seed, lambda m: m.normal(t(m, mean[:5]), t(m, std[:5])))


@pytest.mark.parametrize("seed", SEEDS)
def test_like_constructors_and_size_keyword(seed):
    both(seed, lambda m: m.rand_like(m.zeros(3, 5)))
    both(seed, lambda m: m.randn_like(m.zeros(4, 5, dtype=m.float64)))
    both(seed, lambda m: m.randint_like(m.zeros(6), 3, 8))
    both(seed, lambda m: m.randn(size=(2, 9)))
    both(seed, lambda m: m.rand([3, 6]))


@pytest.mark.parametrize("seed", SEEDS)
def test_default_init_call_sequences(seed):
    """Linear, Conv2d and Embedding's reset_parameters as the uniform_/normal_ calls they make
    (kaiming_uniform_ with a=sqrt(5), then the bias bound 1/sqrt(fan_in); Embedding normal_)."""

    def kaiming_bound(fan_in: int) -> float:
        gain = math.sqrt(2.0 / (1 + math.sqrt(5) ** 2))
        return math.sqrt(3.0) * (gain / math.sqrt(fan_in))

    def linear(m, i, o):
        w, b = m.empty(o, i), m.empty(o)
        w.uniform_(-kaiming_bound(i), kaiming_bound(i))
        b.uniform_(-1 / math.sqrt(i), 1 / math.sqrt(i))
        return w, b

    def conv(m, ci, co, k):
        fan = ci * k * k
        w, b = m.empty(co, ci, k, k), m.empty(co)
        w.uniform_(-kaiming_bound(fan), kaiming_bound(fan))
        b.uniform_(-1 / math.sqrt(fan), 1 / math.sqrt(fan))
        return w, b

    gradviz.manual_seed(seed)
    torch.manual_seed(seed)
    for (gw, gb), mod in [(linear(gradviz, 7, 5), torch.nn.Linear(7, 5)),
                          (conv(gradviz, 3, 4, 3), torch.nn.Conv2d(3, 4, 3)),
                          (linear(gradviz, 1000, 17), torch.nn.Linear(1000, 17))]:
        same(gw, mod.weight)
        same(gb, mod.bias)
    same(gradviz.empty(11, 6).normal_(), torch.nn.Embedding(11, 6).weight)
    same(gradviz.empty(3, 2).normal_(), torch.nn.Embedding(3, 2).weight)  # < 16: the scalar path


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_and_global_interleaved(seed):
    g, tg = gradviz.Generator().manual_seed(seed + 1), torch.Generator().manual_seed(seed + 1)
    gradviz.manual_seed(seed)
    torch.manual_seed(seed)
    calls = [
        (lambda m, gen: m.randn(7, generator=gen)),
        (lambda m, gen: m.rand(17, dtype=m.float64)),
        (lambda m, gen: m.randperm(16, generator=gen)),
        (lambda m, gen: m.randn(3)),  # leaves a cached normal in the default generator
        (lambda m, gen: m.randint(0, 100, (5,), generator=gen)),
        (lambda m, gen: m.randn(1)),  # takes it
        (lambda m, gen: m.empty(16).normal_(generator=gen)),
        (lambda m, gen: m.multinomial(m.ones(9), 4, generator=gen)),
        (lambda m, gen: m.bernoulli(m.full((5,), 0.5), generator=gen)),
        (lambda m, gen: m.empty(20).uniform_(generator=gen)),
        (lambda m, gen: m.randn(5, generator=gen)),
    ]
    for fn in calls:
        same(fn(gradviz, g), fn(torch, tg))
    same(gradviz.get_rng_state(), torch.get_rng_state())
    same(g.get_state(), tg.get_state())


def test_state_round_trip_and_torch_states():
    torch.manual_seed(5)
    torch.randn(3)  # odd: a cached normal travels in the state
    gradviz.set_rng_state(gradviz.from_numpy(torch.get_rng_state().numpy()))
    same(gradviz.randn(5), torch.randn(5))
    s = gradviz.get_rng_state()
    a = gradviz.rand(4)
    gradviz.set_rng_state(s)
    same(gradviz.rand(4), a.numpy())
    g = gradviz.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed() == 67280421310721
    same(g.get_state(), torch.Generator().get_state())
    s = gradviz.get_rng_state()
    with gradviz.random.fork_rng():
        gradviz.rand(3)
    same(gradviz.get_rng_state(), s.numpy())


def test_seed_values():
    for s in (-1, 2**64 - 1, 0):
        gradviz.manual_seed(s)
        torch.manual_seed(s)
        assert gradviz.initial_seed() == torch.initial_seed()
        same(gradviz.rand(3), torch.rand(3))
    s = gradviz.seed()
    assert gradviz.initial_seed() == s
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        gradviz.manual_seed(2**64)


@pytest.mark.parametrize("dn", ["float32", "float64"])
def test_uniform_never_returns_to(dn):
    # ranges where x * (to - from) + from rounds up to `to` often: torch gives `from` instead
    both(0, lambda m: m.empty(1000, dtype=getattr(m, dn)).uniform_(1e8, 1e8 + 16))
    both(0, lambda m: m.empty(1000, dtype=getattr(m, dn)).uniform_(2.0**53, 2.0**53 + 8))


@pytest.mark.parametrize("bounds", [(0, 1), (-0.3, 0.77), (-2, 3)])
def test_float16_uniform_stream(bounds):
    """float16 (which gradviz's dtype table may not have yet) at the sampler level: float draws
    and float bounds, rounded to half."""
    from gradviz.random import _dists
    from gradviz.random._generator import Generator

    torch.manual_seed(3)
    same(_dists.uniform(Generator().manual_seed(3), 3000, np.float16, *bounds),
         torch.empty(3000, dtype=torch.float16).uniform_(*bounds))


@pytest.mark.parametrize("high", [2**28 - 1, 2**28, 2**30, 2**32 - 1, 2**32, 2**40, 2**60])
@pytest.mark.parametrize("dn", ["int64", "float32", "float64"])
def test_randint_range_thresholds(high, dn):
    """64-bit draws from a range of 2**28 on, for every dtype; float bounds moved inward."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(3, lambda m: m.randint(-5, high, (20,), dtype=getattr(m, dn)))
        both(3, lambda m: m.empty(20, dtype=getattr(m, dn)).random_(high))


def test_float_range_warning_matches_torch():
    for m in (torch, gradviz):
        with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]. Due to precision "
                          "limitations float can support"):
            m.randint(0, 2**30, (2,), dtype=m.float32)
