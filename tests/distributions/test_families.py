"""The families added for RL and VAEs (Beta, Gamma, Dirichlet, MultivariateNormal, Laplace,
LogNormal, Poisson, Binomial, Geometric, OneHotCategorical, Relaxed*, Gumbel, Cauchy, HalfNormal,
StudentT, Chi2, MixtureSameFamily, ...), transforms, constraints and kl_divergence pairs against
torch 2.13: the same program on both from the same numbers and seed; values, gradients, the
graph's node names and the order the engine runs them in, and the samples drawn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import test_distributions
import torch
from _dist_validation import default_validation  # noqa: F401 - autouse: torch's default validation
from test_distributions import leaf
from test_distributions import same as same_values_and_graph

import gradviz


def _execution_order(program: Any, T: Any) -> dict[str, list[str]]:  # noqa: N803 - the engine's module
    """For each output that requires grad, the names of the nodes in the order its backward runs
    them (a pre-hook on every node of its graph)."""
    T.manual_seed(0)
    out: dict[str, list[str]] = {}
    for key, (value, leaves) in program(T).items():
        if not value.requires_grad or not leaves:
            continue
        ran: list[str] = []
        seen, stack, handles = set(), [value.grad_fn], []
        while stack:
            n = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            handles.append(n.register_prehook(lambda g, n=n, ran=ran: ran.append(n.name().rsplit("::", 1)[-1])))
            stack.extend(f for f, _ in n.next_functions)
        T.autograd.grad(value.sum(), leaves, allow_unused=True, retain_graph=True)
        for h in handles:
            h.remove()
        out[key] = ran
    return out


def same(program: Any) -> None:
    same_values_and_graph(program)
    want, got = _execution_order(program, torch), _execution_order(program, gradviz)
    for key in want:
        assert got[key] == want[key], key

A = [0.4, 2.0, 9.5]
B = [1.5, 0.7, 3.0]
V01 = [0.2, 0.5, 0.9]


def p_gamma(T: Any) -> dict[str, Any]:
    c, r = leaf(T, A), leaf(T, B)
    d = T.distributions.Gamma(c, r)
    v = T.tensor([0.3, 1.0, 2.0], dtype=T.float64)
    chi = T.distributions.Chi2(c)
    return {"log_prob": (d.log_prob(v), (c, r)), "entropy": (d.entropy(), (c, r)), "mean": (d.mean, (c, r)),
            "variance": (d.variance, (c, r)), "mode": (d.mode, (c, r)), "rsample": (d.rsample((2,)), (c, r)),
            "sample": (d.sample(), ()), "chi2_log_prob": (chi.log_prob(v), (c,)), "chi2_df": (chi.df, (c,)),
            "chi2_rsample": (chi.rsample(), (c,))}


def p_beta_dirichlet(T: Any) -> dict[str, Any]:
    a, b = leaf(T, A), leaf(T, B)
    d = T.distributions.Beta(a, b)
    v = T.tensor(V01, dtype=T.float64)
    conc = leaf(T, [[0.5, 2.0, 7.0], [1.0, 1.0, 1.0]])
    dd = T.distributions.Dirichlet(conc)
    x = T.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=T.float64)
    return {"log_prob": (d.log_prob(v), (a, b)), "entropy": (d.entropy(), (a, b)), "mean": (d.mean, (a, b)),
            "variance": (d.variance, (a, b)), "rsample": (d.rsample((3,)), (a, b)), "sample": (d.sample(), ()),
            "scalar": (T.distributions.Beta(2.0, 3.0).log_prob(v), ()),
            "d_log_prob": (dd.log_prob(x), (conc,)), "d_entropy": (dd.entropy(), (conc,)),
            "d_rsample": (dd.rsample((2,)), (conc,)), "d_mean": (dd.mean, (conc,)), "d_var": (dd.variance, (conc,))}


def p_location_scale(T: Any) -> dict[str, Any]:
    loc, scale = leaf(T, [0.5, -1.0, 2.0]), leaf(T, B)
    v = T.tensor([0.1, -0.4, 2.5], dtype=T.float64)
    out: dict[str, Any] = {}
    for name in ("Laplace", "Cauchy", "Gumbel", "LogNormal"):
        d = getattr(T.distributions, name)(loc, scale)
        x = v.abs() if name == "LogNormal" else v
        out[name + "_log_prob"] = (d.log_prob(x), (loc, scale))
        out[name + "_entropy"] = (d.entropy(), (loc, scale))
        out[name + "_sample"] = (d.sample((2,)), ())
        if name != "Cauchy":
            out[name + "_mean"] = (d.mean, (loc, scale))
            out[name + "_variance"] = (d.variance, (loc, scale))
        if d.has_rsample:
            out[name + "_rsample"] = (d.rsample((2,)), (loc, scale))
    for name in ("Laplace", "Cauchy"):
        d = getattr(T.distributions, name)(loc, scale)
        out[name + "_cdf"] = (d.cdf(v), (loc, scale))
        out[name + "_icdf"] = (d.icdf(T.tensor(V01, dtype=T.float64)), (loc, scale))
    h = T.distributions.HalfNormal(scale)
    out["half_log_prob"] = (h.log_prob(v.abs()), (scale,))
    out["half_entropy"] = (h.entropy(), (scale,))
    out["half_rsample"] = (h.rsample((2,)), (scale,))
    out["half_mean"] = (h.mean, (scale,))
    df = leaf(T, [3.0, 1.5, 0.8])
    t = T.distributions.StudentT(df, loc, scale)
    out["t_log_prob"] = (t.log_prob(v), (df, loc, scale))
    out["t_entropy"] = (t.entropy(), (df, loc, scale))
    out["t_rsample"] = (t.rsample(), (df, loc, scale))
    out["t_mean"] = (t.mean, (loc,))
    out["t_variance"] = (t.variance, (df, scale))
    return out


def p_discrete(T: Any) -> dict[str, Any]:
    rate = leaf(T, [0.5, 2.0, 4.0])
    p = T.distributions.Poisson(rate)
    k = T.tensor([0.0, 3.0, 2.0], dtype=T.float64)
    probs = leaf(T, V01)
    g = T.distributions.Geometric(probs)
    logits = leaf(T, [[0.1, -1.0, 2.0], [0.3, 0.3, -0.5]])
    oh = T.distributions.OneHotCategorical(logits=logits)
    st = T.distributions.OneHotCategoricalStraightThrough(logits=logits)
    onehot = T.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=T.float64)
    return {"p_log_prob": (p.log_prob(k), (rate,)), "p_sample": (p.sample((2,)), ()), "p_mean": (p.mean, (rate,)),
            "g_log_prob": (g.log_prob(k), (probs,)), "g_entropy": (g.entropy(), (probs,)),
            "g_sample": (g.sample((2,)), ()), "g_mean": (g.mean, (probs,)),
            "g_logits": (T.distributions.Geometric(logits=probs).log_prob(k), (probs,)),
            "oh_log_prob": (oh.log_prob(onehot), (logits,)), "oh_entropy": (oh.entropy(), (logits,)),
            "oh_sample": (oh.sample((2,)), ()), "oh_mode": (oh.mode, ()), "oh_enum": (oh.enumerate_support(), ()),
            "st_rsample": (st.rsample(), (logits,))}


def p_relaxed_mixture(T: Any) -> dict[str, Any]:
    temp = T.tensor(0.5, dtype=T.float64)
    logits = leaf(T, [[0.1, -1.0, 2.0], [0.3, 0.3, -0.5]])
    r = T.distributions.RelaxedOneHotCategorical(temp, logits=logits)
    sample = r.rsample()
    bl = leaf(T, [0.3, -0.2])
    rb = T.distributions.RelaxedBernoulli(temp, logits=bl)
    mix = leaf(T, [0.2, -0.4, 1.0])
    loc, scale = leaf(T, [-1.0, 0.0, 2.0]), leaf(T, [0.5, 1.0, 0.3])
    gmm = T.distributions.MixtureSameFamily(T.distributions.Categorical(logits=mix),
                                            T.distributions.Normal(loc, scale))
    x = T.tensor([0.1, 1.9, -2.0, 0.5], dtype=T.float64)
    return {"r_rsample": (sample, (logits,)), "r_log_prob": (r.log_prob(sample.detach()), (logits,)),
            "rb_rsample": (rb.rsample((2,)), (bl,)), "rb_log_prob": (rb.log_prob(T.tensor([0.2, 0.7],
                                                                                          dtype=T.float64)), (bl,)),
            "gmm_log_prob": (gmm.log_prob(x), (mix, loc, scale)), "gmm_mean": (gmm.mean, (mix, loc)),
            "gmm_variance": (gmm.variance, (mix, loc, scale)), "gmm_sample": (gmm.sample((3,)), ())}


def p_kl(T: Any) -> dict[str, Any]:
    a, b = leaf(T, A), leaf(T, B)
    D, kl = T.distributions, T.distributions.kl_divergence
    conc = leaf(T, [[0.5, 2.0, 7.0], [1.0, 1.0, 1.0]])
    probs = leaf(T, V01)
    logits = leaf(T, [[0.1, -1.0, 2.0], [0.3, 0.3, -0.5]])
    return {
        "beta": (kl(D.Beta(a, b), D.Beta(b, a)), (a, b)),
        "gamma": (kl(D.Gamma(a, b), D.Gamma(b, a)), (a, b)),
        "dirichlet": (kl(D.Dirichlet(conc), D.Dirichlet(conc.flip(-1))), (conc,)),
        "laplace": (kl(D.Laplace(a, b), D.Laplace(b, a)), (a, b)),
        "gumbel": (kl(D.Gumbel(a, b), D.Gumbel(b, a)), (a, b)),
        "halfnormal": (kl(D.HalfNormal(a), D.HalfNormal(b)), (a, b)),
        "poisson": (kl(D.Poisson(a), D.Poisson(b)), (a, b)),
        "geometric": (kl(D.Geometric(probs), D.Geometric(probs.flip(0))), (probs,)),
        "onehot": (kl(D.OneHotCategorical(logits=logits), D.OneHotCategorical(logits=logits.flip(-1))), (logits,)),
        "bernoulli_poisson": (kl(D.Bernoulli(probs), D.Poisson(a)), (probs, a)),
    }


@pytest.mark.parametrize("program", [p_gamma, p_beta_dirichlet, p_location_scale, p_discrete, p_relaxed_mixture,
                                     p_kl], ids=lambda p: p.__name__)
def test_matches_torch(program: Any) -> None:
    same(program)


def test_gamma_draws_are_torchs_in_float32() -> None:
    """_standard_gamma and _sample_dirichlet draw torch's numbers (and leave the stream where
    torch leaves it), for a float32 input too, whose boost and offset torch computes in float."""
    alpha = [0.05, 0.5, 1.0, 2.5, 30.0, 0.0]
    torch.manual_seed(3)
    want = [torch._standard_gamma(torch.tensor(alpha)), torch._sample_dirichlet(torch.tensor([alpha[:3], alpha[2:5]])),
            torch.randn(3)]
    gradviz.manual_seed(3)
    got = [gradviz._standard_gamma(gradviz.tensor(alpha)),
           gradviz._sample_dirichlet(gradviz.tensor([alpha[:3], alpha[2:5]])), gradviz.randn(3)]
    for w, g in zip(want, got):
        assert g.dtype == gradviz.float32
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_poisson_draws_are_torchs(dtype: str) -> None:
    """Small rates (product of uniforms) and rates from 10 on (transformed rejection)."""
    rates = [[0.0, 0.3, 1.0, 2.5, 5.0, 9.9], [10.0, 12.5, 30.0, 100.0, 1000.0, 55.5]] * 5
    torch.manual_seed(1)
    want = [torch.poisson(torch.tensor(rates, dtype=getattr(torch, dtype))), torch.rand(2)]
    gradviz.manual_seed(1)
    got = [gradviz.poisson(gradviz.tensor(rates, dtype=getattr(gradviz, dtype))), gradviz.rand(2)]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_reparameterisation_gradients_are_torchs() -> None:
    """_standard_gamma_grad and _dirichlet_grad at given points, over each of their branches."""
    alpha = np.array([0.3, 0.5, 2.0, 5.0, 9.0, 12.0, 30.0, 30.0])
    x = np.array([0.1, 0.9, 1.5, 5.0, 2.0, 12.5, 25.0, 45.0])
    want = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    got = gradviz._standard_gamma_grad(gradviz.tensor(alpha), gradviz.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    xs = np.array([0.01, 0.3, 0.5, 0.95, 0.6, 0.45, 0.4])
    al = np.array([0.5, 2.0, 3.0, 1.0, 8.0, 10.0, 7.0])
    tot = np.array([1.0, 5.0, 4.0, 3.0, 20.0, 18.0, 16.0])
    want = torch._dirichlet_grad(torch.tensor(xs), torch.tensor(al), torch.tensor(tot)).numpy()
    got = gradviz._dirichlet_grad(gradviz.tensor(xs), gradviz.tensor(al), gradviz.tensor(tot)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("module", ["beta", "gamma", "dirichlet", "laplace", "log_normal", "poisson", "geometric",
                                    "one_hot_categorical", "relaxed_bernoulli", "relaxed_categorical", "gumbel",
                                    "cauchy", "half_normal", "studentT", "chi2", "mixture_same_family", "binomial",
                                    "fishersnedecor", "half_cauchy", "inverse_gamma", "kumaraswamy", "logistic_normal",
                                    "multinomial", "negative_binomial", "pareto", "weibull", "multivariate_normal",
                                    "continuous_bernoulli", "lowrank_multivariate_normal", "constraint_registry",
                                    "von_mises", "generalized_pareto",
                                    "exp_family"])
def test_submodules_import_as_torchs(module: str) -> None:
    import importlib

    want = importlib.import_module(f"torch.distributions.{module}")
    got = importlib.import_module(f"gradviz.distributions.{module}")
    assert set(want.__all__) <= set(dir(got)), set(want.__all__) - set(dir(got))


def test_bad_parameters_fail_as_torchs() -> None:
    # validate_args given: torch's own default is turned off process-wide once torch._dynamo
    # patches torch (another test in the same worker may compile)
    for T in (torch, gradviz):
        with pytest.raises(ValueError, match="Expected parameter concentration"):
            T.distributions.Beta(T.tensor([-1.0]), T.tensor([1.0]), validate_args=True)
        with pytest.raises(ValueError, match="must be at least one-dimensional"):
            T.distributions.Dirichlet(T.tensor(1.0), validate_args=True)


def p_multivariate_normal(T: Any) -> dict[str, Any]:
    loc = leaf(T, [[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]])
    a = leaf(T, [[1.0, 0.2, 0.0], [0.3, 1.5, 0.1], [-0.2, 0.4, 0.8]])
    cov = a @ a.mT + T.eye(3, dtype=T.float64)
    tril = leaf(T, [[1.2, 0.0, 0.0], [0.3, 0.7, 0.0], [-0.4, 0.1, 0.9]])
    v = T.tensor([[0.1, -0.4, 2.5], [1.0, 0.0, 0.0]], dtype=T.float64)
    d = T.distributions.MultivariateNormal(loc, covariance_matrix=cov)
    s = T.distributions.MultivariateNormal(loc, scale_tril=tril)
    diag = T.distributions.MultivariateNormal(loc, T.diag_embed(T.exp(loc)))
    batched = T.distributions.MultivariateNormal(loc[0], scale_tril=T.stack([tril, 2 * tril]))
    return {"cov_log_prob": (d.log_prob(v), (loc, a)), "cov_entropy": (d.entropy(), (a,)),
            "cov_rsample": (d.rsample((2,)), (loc, a)), "cov_sample": (d.sample(), ()),
            "tril_log_prob": (s.log_prob(v), (loc, tril)), "tril_cov": (s.covariance_matrix, (tril,)),
            "variance": (s.variance, (tril,)), "diag_log_prob": (diag.log_prob(v), (loc,)),
            "sample_batch_log_prob": (s.log_prob(v.expand(4, 2, 3)), (loc, tril)),
            "batched_log_prob": (batched.log_prob(v), (loc, tril)),
            "kl": (T.distributions.kl_divergence(d, s), (loc, a, tril))}


def test_multivariate_normal_matches_torch() -> None:
    same(p_multivariate_normal)


def test_solve_triangular_matches_torch() -> None:
    """linalg.solve_triangular (MultivariateNormal's Mahalanobis term): values, both gradients and
    the node, for each triangle, side and unit diagonal, with a broadcast batch."""
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b_np = rng.standard_normal((2, 3, 2))
    for upper in (False, True):
        for left in (True, False):
            for unit in (False, True):
                def program(T: Any, upper=upper, left=left, unit=unit) -> dict[str, Any]:
                    a, b = leaf(T, a_np), leaf(T, b_np if left else b_np.swapaxes(-1, -2))
                    x = T.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)
                    y = T.linalg.solve_triangular(a[0], b, upper=upper, left=left, unitriangular=unit)
                    return {"x": (x, (a, b)), "broadcast": (y, (a, b))}

                same(program)


def p_more_families(T: Any) -> dict[str, Any]:
    a, b = leaf(T, A), leaf(T, B)
    v01 = T.tensor(V01, dtype=T.float64)
    vpos = T.tensor([0.3, 1.5, 4.0], dtype=T.float64)
    D = T.distributions
    out: dict[str, Any] = {}
    for name, d, v in (("half_cauchy", D.HalfCauchy(b), vpos), ("inverse_gamma", D.InverseGamma(a, b), vpos),
                       ("pareto", D.Pareto(b, a), vpos + 3.0), ("weibull", D.Weibull(b, a), vpos),
                       ("kumaraswamy", D.Kumaraswamy(a, b), v01), ("fisher", D.FisherSnedecor(a, b + 4.0), vpos)):
        out[name + "_log_prob"] = (d.log_prob(v), (a, b))
        if name != "fisher":  # torch has no FisherSnedecor.entropy
            out[name + "_entropy"] = (d.entropy(), (a, b))
        out[name + "_sample"] = (d.sample((2,)), ())
        if name not in ("half_cauchy",):
            out[name + "_mean"] = (d.mean, (a, b))
            out[name + "_variance"] = (d.variance, (a, b))
        if d.has_rsample:
            out[name + "_rsample"] = (d.rsample((2,)), (a, b))
    n = T.tensor([5.0, 30.0, 200.0], dtype=T.float64)
    probs = leaf(T, V01)
    bi = D.Binomial(n, probs)
    k = T.tensor([2.0, 10.0, 180.0], dtype=T.float64)
    out["binomial_log_prob"] = (bi.log_prob(k), (probs,))
    out["binomial_sample"] = (bi.sample((3,)), ())
    out["binomial_entropy"] = (D.Binomial(6, probs).entropy(), (probs,))
    out["binomial_mean"] = (bi.mean, (probs,))
    nb = D.NegativeBinomial(T.tensor([2.0, 3.0, 5.0], dtype=T.float64), logits=probs)
    out["negbin_log_prob"] = (nb.log_prob(k), (probs,))
    out["negbin_sample"] = (D.NegativeBinomial(2.0, T.tensor([0.3, 0.5], dtype=T.float64)).sample((2,)), ())
    logits = leaf(T, [[0.1, -1.0, 2.0], [0.3, 0.3, -0.5]])
    mn = D.Multinomial(5, logits=logits)
    counts = T.tensor([[1.0, 1.0, 3.0], [0.0, 5.0, 0.0]], dtype=T.float64)
    out["multinomial_log_prob"] = (mn.log_prob(counts), (logits,))
    out["multinomial_entropy"] = (mn.entropy(), (logits,))
    out["multinomial_sample"] = (mn.sample((2,)), ())
    loc = leaf(T, [[0.5, -1.0], [0.0, 0.3]])
    ln = D.LogisticNormal(loc, T.tensor([[1.0, 0.5], [0.3, 2.0]], dtype=T.float64))
    y = T.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=T.float64)
    out["logistic_normal_log_prob"] = (ln.log_prob(y), (loc,))
    out["logistic_normal_rsample"] = (ln.rsample((2,)), (loc,))
    out["kl_binomial"] = (D.kl_divergence(D.Binomial(n, probs), D.Binomial(n, probs.flip(0))), (probs,))
    out["kl_pareto"] = (D.kl_divergence(D.Pareto(b, a), D.Pareto(b * 0.5, a)), (a, b))
    return out


def p_transforms(T: Any) -> dict[str, Any]:
    tr = T.distributions.transforms
    x = leaf(T, [[0.5, -1.0, 2.0], [0.1, 0.3, -0.2]])
    out: dict[str, Any] = {}
    for name, t in (("power", tr.PowerTransform(T.tensor(2.5, dtype=T.float64))), ("softplus", tr.SoftplusTransform()),
                    ("stick", tr.StickBreakingTransform()), ("softmax", tr.SoftmaxTransform()),
                    ("independent", tr.IndependentTransform(tr.ExpTransform(), 1)),
                    ("reshape", tr.ReshapeTransform((3,), (3, 1))), ("identity", tr.identity_transform)):
        xin = x.exp() if name == "power" else x
        y = t(xin)
        out[name] = (y, (x,))
        out[name + "_inv"] = (t.inv(y), (x,))
        if name != "softmax":
            out[name + "_ladj"] = (t.log_abs_det_jacobian(xin, y), (x,))
    return out


def test_more_families_match_torch() -> None:
    same(p_more_families)


def test_more_transforms_match_torch() -> None:
    same(p_transforms)


def test_binomial_draws_are_torchs() -> None:
    """torch.binomial: inversion and BTRS draws, p above and below 1/2, float32 and float64."""
    n = [5.0, 20.0, 100.0, 1000.0, 3.0, 50.0, 0.0, 7.0] * 10
    p = [0.3, 0.6, 0.5, 0.02, 0.9, 0.99, 0.5, 0.0] * 10
    for name in ("float32", "float64"):
        torch.manual_seed(0)
        dt = getattr(torch, name)
        want = [torch.binomial(torch.tensor(n, dtype=dt), torch.tensor(p, dtype=dt)), torch.rand(2)]
        gradviz.manual_seed(0)
        got = [gradviz.binomial(gradviz.tensor(n, dtype=getattr(gradviz, name)),
                                gradviz.tensor(p, dtype=getattr(gradviz, name))), gradviz.rand(2)]
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def p_expand(T: Any) -> dict[str, Any]:
    """Distribution.expand: parameters expanded as views (ExpandBackward0), samples and
    log_prob over the new batch shape, for flat families and the ones built on others."""
    a, b = leaf(T, A), leaf(T, B)
    logits = leaf(T, [0.1, -1.0, 2.0])
    D = T.distributions
    shape = (2, 3)
    v = T.tensor([[0.2, 0.5, 0.9], [0.1, 0.4, 0.7]], dtype=T.float64)
    out: dict[str, Any] = {}
    for name, d, x in (("normal", D.Normal(a, b), v), ("gamma", D.Gamma(a, b), v), ("beta", D.Beta(a, b), v),
                       ("lognormal", D.LogNormal(a, b), v), ("gumbel", D.Gumbel(a, b), v),
                       ("studentT", D.StudentT(a, b, b), v),
                       ("bernoulli", D.Bernoulli(logits=logits), T.tensor([[1.0, 0.0, 1.0]] * 2, dtype=T.float64))):
        e = d.expand(shape)
        out[name + "_log_prob"] = (e.log_prob(x), (a, b) if name != "bernoulli" else (logits,))
        out[name + "_sample"] = (e.sample(), ())
    cl = leaf(T, [[0.1, -1.0, 2.0]])
    out["categorical"] = (D.Categorical(logits=cl).expand((4,)).log_prob(T.tensor([0, 1, 2, 2])), (cl,))
    ind = D.Independent(D.Normal(a, b), 1).expand((2,))
    out["independent"] = (ind.log_prob(v), (a, b))
    mvn = D.MultivariateNormal(a, scale_tril=T.diag_embed(b)).expand((2,))
    out["mvn"] = (mvn.log_prob(v), (a, b))
    ln = D.LogisticNormal(T.tensor(0.3, dtype=T.float64), T.tensor(1.2, dtype=T.float64))
    out["logistic_normal_scalar"] = (ln.log_prob(T.tensor([0.4, 0.6], dtype=T.float64)), ())
    return out


def test_expand_matches_torch() -> None:
    same(p_expand)
    for T in (torch, gradviz):
        e = T.distributions.Normal(T.zeros(3), T.ones(3)).expand((2, 3))
        assert (tuple(e.batch_shape), type(e).__name__) == ((2, 3), "Normal")


def p_continuous_bernoulli(T: Any) -> dict[str, Any]:
    probs = leaf(T, [0.2, 0.4995, 0.9])
    logits = leaf(T, [-1.0, 0.001, 2.0])
    v = T.tensor([0.3, 0.5, 0.95], dtype=T.float64)
    d, dl = T.distributions.ContinuousBernoulli(probs), T.distributions.ContinuousBernoulli(logits=logits)
    return {"log_prob": (d.log_prob(v), (probs,)), "entropy": (d.entropy(), (probs,)), "mean": (d.mean, (probs,)),
            "variance": (d.variance, (probs,)), "cdf": (d.cdf(v), (probs,)), "icdf": (d.icdf(v), (probs,)),
            "rsample": (d.rsample((2,)), (probs,)), "sample": (d.sample(), ()),
            "l_log_prob": (dl.log_prob(v), (logits,)), "l_entropy": (dl.entropy(), (logits,))}


def test_continuous_bernoulli_matches_torch() -> None:
    same(p_continuous_bernoulli)


def p_lowrank(T: Any) -> dict[str, Any]:
    loc = leaf(T, [[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]])
    w = leaf(T, [[1.0, 0.2], [0.3, -1.5], [-0.2, 0.4]])
    diag = leaf(T, [0.5, 1.2, 0.8])
    d = T.distributions.LowRankMultivariateNormal(loc, w, diag)
    v = T.tensor([[0.1, -0.4, 2.5], [1.0, 0.0, 0.0]], dtype=T.float64)
    return {"log_prob": (d.log_prob(v), (loc, w, diag)), "entropy": (d.entropy(), (w, diag)),
            "rsample": (d.rsample((2,)), (loc, w, diag)), "variance": (d.variance, (w, diag)),
            "covariance": (d.covariance_matrix, (w, diag)), "scale_tril": (d.scale_tril, (w, diag)),
            "precision": (d.precision_matrix, (w, diag))}


def test_lowrank_multivariate_normal_matches_torch() -> None:
    same(p_lowrank)


def p_constraint_registry(T: Any) -> dict[str, Any]:
    """biject_to / transform_to for the constraints families use: the transform, its value,
    inverse and log |det J| from unconstrained values."""
    D = T.distributions
    c = D.constraints
    x = leaf(T, [[0.5, -1.0, 2.0], [0.1, 0.3, -0.2], [1.0, 0.0, -0.5]])
    out: dict[str, Any] = {}
    cases = [("real", D.biject_to(c.real)), ("positive", D.biject_to(c.positive)),
             ("greater_than", D.transform_to(c.greater_than(1.5))), ("less_than", D.biject_to(c.less_than(-1.0))),
             ("unit_interval", D.biject_to(c.unit_interval)), ("interval", D.transform_to(c.interval(-2.0, 3.0))),
             ("simplex", D.biject_to(c.simplex)), ("simplex_t", D.transform_to(c.simplex)),
             ("independent", D.biject_to(c.independent(c.positive, 1))),
             ("lower_cholesky", D.transform_to(c.lower_cholesky))]
    for name, t in cases:
        y = t(x)
        out[name] = (y, (x,))
        out[name + "_inv"] = (t.inv(y), (x,))
        if name not in ("simplex_t", "lower_cholesky"):
            out[name + "_ladj"] = (t.log_abs_det_jacobian(x, y), (x,))
    return out


def test_constraint_registry_matches_torch() -> None:
    same(p_constraint_registry)
    for T in (torch, gradviz):
        with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
            T.distributions.biject_to(T.distributions.constraints.boolean)


def p_von_mises(T: Any) -> dict[str, Any]:
    loc, conc = leaf(T, [0.5, -1.0, 2.0]), leaf(T, [0.5, 4.0, 12.0])
    d = T.distributions.VonMises(loc, conc)
    v = T.tensor([0.1, -0.4, 2.5], dtype=T.float64)
    f32 = T.distributions.VonMises(T.tensor([0.0, 1.0]), T.tensor([1e-6, 2.0]))
    return {"log_prob": (d.log_prob(v), (loc, conc)), "variance": (d.variance, (conc,)),
            "sample": (d.sample((4,)), ()), "sample_f32": (f32.sample((3,)), ())}


def test_von_mises_matches_torch() -> None:
    same(p_von_mises)


def p_generalized_pareto_and_more_transforms(T: Any) -> dict[str, Any]:
    # float32: torch's log_prob compares the concentration with a float32 zero (isclose), which
    # a float64 concentration fails in torch itself
    def leaf32(a: list[float]) -> Any:
        return T.tensor(np.asarray(a, dtype=np.float32), requires_grad=True)

    loc, scale, conc = leaf32([0.0, 1.0, -0.5]), leaf32([1.0, 0.5, 2.0]), leaf32([0.3, 0.0, -0.2])
    d = T.distributions.GeneralizedPareto(loc, scale, conc)
    v = T.tensor([0.5, 1.5, 1.0])
    tr = T.distributions.transforms
    x = leaf(T, [[0.5, -1.0], [0.1, 0.3]])
    pd = tr.PositiveDefiniteTransform()
    cdf = tr.CumulativeDistributionTransform(T.distributions.Normal(loc.double(), scale.double()))
    v = v.double()
    return {"log_prob": (d.log_prob(v), (loc, scale, conc)), "cdf": (d.cdf(v), (loc, scale, conc)),
            "icdf": (d.icdf(T.tensor([0.1, 0.5, 0.9])), (loc, scale, conc)),
            "entropy": (d.entropy(), (scale, conc)), "mean": (d.mean, (loc, scale, conc)),
            "variance": (d.variance, (scale, conc)), "rsample": (d.rsample((2,)), (loc, scale, conc)),
            "pd": (pd(x), (x,)), "pd_inv": (pd.inv(pd(x)), (x,)),
            "cdf_t": (cdf(v), (loc, scale)), "cdf_ladj": (cdf.log_abs_det_jacobian(v, cdf(v)), (loc, scale)),
            "transform_to_pd": (T.distributions.transform_to(T.distributions.constraints.positive_definite)(x), (x,))}


def test_generalized_pareto_and_more_transforms_match_torch() -> None:
    same(p_generalized_pareto_and_more_transforms)


def p_structured_transforms(T: Any) -> dict[str, Any]:
    """CorrCholesky (through vec_to_tril_matrix's masked write), Cat and Stack transforms, and
    the registry's corr_cholesky / cat / stack entries."""
    D = T.distributions
    tr, c = D.transforms, D.constraints
    v = leaf(T, [[0.5, -1.0, 2.0], [0.1, 0.3, -0.2]])
    cc = tr.CorrCholeskyTransform()
    y = cc(v)
    x = leaf(T, [[0.5, -1.0, 2.0, 0.3], [0.1, 0.3, -0.2, 1.0]])
    cat = tr.CatTransform([tr.ExpTransform(), tr.identity_transform, tr.SigmoidTransform()], dim=-1,
                          lengths=[1, 2, 1])
    stack = tr.StackTransform([tr.ExpTransform(), tr.TanhTransform()], dim=0)
    yc, ys = cat(x), stack(x)
    reg = D.biject_to(c.cat([c.positive, c.real], dim=-1, lengths=[2, 2]))
    return {"corr": (y, (v,)), "corr_inv": (cc.inv(y), (v,)), "corr_ladj": (cc.log_abs_det_jacobian(v, y), (v,)),
            "corr_registry": (D.transform_to(c.corr_cholesky)(v), (v,)),
            "cat": (yc, (x,)), "cat_inv": (cat.inv(yc), (x,)), "cat_ladj": (cat.log_abs_det_jacobian(x, yc), (x,)),
            "stack": (ys, (x,)), "stack_inv": (stack.inv(ys), (x,)),
            "stack_ladj": (stack.log_abs_det_jacobian(x, ys), (x,)), "cat_registry": (reg(x), (x,)),
            "corr_check": (c.corr_cholesky.check(y.detach()), ()),
            "psd_check": (c.positive_semidefinite.check(T.eye(3, dtype=T.float64)), ())}


def test_structured_transforms_match_torch() -> None:
    same(p_structured_transforms)


def _kl_family(T: Any, name: str, a: Any, b: Any) -> Any:
    """One instance of each family over a batch of 3, from two positive leaves a and b."""
    D = T.distributions
    return {
        "Beta": lambda: D.Beta(a, b), "ContinuousBernoulli": lambda: D.ContinuousBernoulli(a / (a + b)),
        "Exponential": lambda: D.Exponential(a), "Gamma": lambda: D.Gamma(a, b), "Gumbel": lambda: D.Gumbel(a, b),
        "Laplace": lambda: D.Laplace(a, b), "Normal": lambda: D.Normal(a, b), "Pareto": lambda: D.Pareto(b, a + 2.5),
        "Uniform": lambda: D.Uniform(a * 0.1, a * 0.1 + b * 0.2), "Poisson": lambda: D.Poisson(a),
        "Bernoulli": lambda: D.Bernoulli(a / (a + b)), "Cauchy": lambda: D.Cauchy(a, b),
        "Binomial": lambda: D.Binomial(5, a / (a + b)),
        "LogNormal": lambda: D.LogNormal(a, b),
    }[name]()


KL_PAIRS = [("Beta", q) for q in ("ContinuousBernoulli", "Exponential", "Gamma", "Normal", "Pareto", "Uniform")] + [
    ("ContinuousBernoulli", q) for q in ("ContinuousBernoulli", "Exponential", "Normal", "Pareto", "Uniform")] + [
    ("Exponential", q) for q in ("Beta", "Gamma", "Gumbel", "Normal", "Pareto", "Uniform")] + [
    ("Gamma", q) for q in ("Beta", "Exponential", "Gumbel", "Normal", "Uniform")] + [
    ("Gumbel", q) for q in ("Exponential", "Normal", "Uniform")] + [
    ("Laplace", q) for q in ("Gamma", "Normal")] + [
    ("Normal", q) for q in ("Exponential", "Gumbel", "Laplace", "Uniform")] + [
    ("Pareto", q) for q in ("Exponential", "Gamma", "Normal", "Uniform")] + [
    ("Poisson", q) for q in ("Bernoulli", "Binomial")] + [
    ("Uniform", q) for q in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Gumbel", "Normal", "Pareto")] + [
    ("Cauchy", "Cauchy"), ("Exponential", "Exponential"), ("LogNormal", "LogNormal")]


@pytest.mark.parametrize("pair", KL_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_pair_matches_torch(pair: tuple[str, str]) -> None:
    def program(T: Any) -> dict[str, Any]:
        a, b = leaf(T, [0.4, 0.7, 0.9]), leaf(T, [1.5, 0.7, 3.0])
        p, q = _kl_family(T, pair[0], a, b), _kl_family(T, pair[1], b, a)
        return {"kl": (T.distributions.kl_divergence(p, q), (a, b))}

    same(program)


def test_kl_exponential_family_bregman_matches_torch() -> None:
    """Two instances of a family with no closed form of its own go through the Bregman divergence
    of the log normaliser (autograd with create_graph), as torch's ExponentialFamily pair does."""
    def program(T: Any) -> dict[str, Any]:
        a = leaf(T, [0.4, 0.7, 0.9])
        D = T.distributions
        return {"kl": (D.kl._kl_expfamily_expfamily(D.Normal(a, a + 1), D.Normal(a * 2, a + 0.5)), (a,))}

    same(program)
    for T in (torch, gradviz):
        with pytest.raises(NotImplementedError, match="cross KL-divergence between different exponential"):
            T.distributions.kl._kl_expfamily_expfamily(T.distributions.Normal(0.0, 1.0),
                                                       T.distributions.Exponential(1.0))


def test_kl_lowrank_pairs_match_torch() -> None:
    def program(T: Any) -> dict[str, Any]:
        D = T.distributions
        loc = leaf(T, [0.5, -1.0, 2.0])
        w = leaf(T, [[1.0, 0.2], [0.3, -1.5], [-0.2, 0.4]])
        diag = leaf(T, [0.5, 1.2, 0.8])
        tril = leaf(T, [[1.2, 0.0, 0.0], [0.3, 0.7, 0.0], [-0.4, 0.1, 0.9]])
        lr = D.LowRankMultivariateNormal(loc, w, diag)
        lr2 = D.LowRankMultivariateNormal(loc * 0.5, w * 1.5, diag + 0.3)
        mvn = D.MultivariateNormal(loc.flip(0), scale_tril=tril)
        kl = D.kl_divergence
        return {"lr_lr": (kl(lr, lr2), (loc, w, diag)), "mvn_lr": (kl(mvn, lr), (loc, w, diag, tril)),
                "lr_mvn": (kl(lr, mvn), (loc, w, diag, tril))}

    same(program)


def test_mixture_support_is_torchs() -> None:
    """MixtureSameFamily's support is the component's with the component dim put back
    (MixtureSameFamilyConstraint): printed, checked, and refusing a value outside it alike."""
    got = []
    for T in (torch, gradviz):
        D = T.distributions
        g = D.MixtureSameFamily(D.Categorical(logits=T.zeros(2)), D.Gamma(T.ones(2), T.ones(2)), validate_args=True)
        with pytest.raises(ValueError) as e:
            g.log_prob(T.tensor([-1.0]))
        got.append((repr(g.support), str(e.value).splitlines()[0],
                    g.support.check(T.tensor([[0.5], [-2.0]])).tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("program", [test_distributions.p_normal, test_distributions.p_categorical,
                                     test_distributions.p_bernoulli, test_distributions.p_uniform_exponential,
                                     test_distributions.p_independent_transformed, test_distributions.p_kl],
                         ids=lambda p: p.__name__)
def test_first_families_run_in_torchs_order(program: Any) -> None:
    """The families gradviz had before (Normal, Categorical, ...): their backward runs the nodes
    in torch's order too."""
    want, got = _execution_order(program, torch), _execution_order(program, gradviz)
    for key in want:
        assert got[key] == want[key], key
