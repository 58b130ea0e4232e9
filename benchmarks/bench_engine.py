"""The engine workloads: gradviz against torch, HIPS autograd, mygrad, micrograd, the
pure-Python floor (peers/minimal_engine.py) and, for the MLP, hand-written numpy.

- W1 chain: x of shape (1,), N x ``y = y * 1.0001 + 0.0001``, then ``y.sum()``: the forward
  (building the graph) and the backward are timed separately. Per-node cost dominates here.
- W2 fan-in: x of shape (16,), B branches ``(x * c_i).tanh()`` summed by a chain of adds: the
  backward, where x's AccumulateGrad gathers B gradients in one InputBuffer.
- W3 MLP step: batch 64, 784-256-256-10, tanh, softmax cross-entropy, float32: forward and
  backward with fresh gradients, where numpy's own kernels dominate.

    python benchmarks/bench_engine.py            # full sizes, results/engine.json
    python benchmarks/bench_engine.py --quick    # small sizes, a CI smoke run
    python benchmarks/bench_engine.py --workload w1_backward --impl torch

gradviz runs as installed: its engine's hot path compiled where scripts/setup.sh built it
(gradviz/_compiled.py), else its Python source. Two more gradviz implementations, measured only
when asked for with --impl (the check's facts say which path each ran):

- ``gradviz-pure``: the same checkout with GRADVIZ_PURE_PYTHON=1 (the Python source always);
- ``gradviz-base``: the gradviz of another checkout, GRADVIZ_BENCH_BASELINE=/path/to/it (old
  against new code in one run, their processes alternated like every engine's).

    GRADVIZ_BENCH_BASELINE=/tmp/old python benchmarks/bench_engine.py \
        --impl torch --impl numpy --impl gradviz-pure --impl gradviz-base
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
# Run as a script from anywhere: the harness and peers sit beside this file, and the checkout's
# gradviz is the one measured, installed or not.
for _p in (str(BENCH_DIR), str(BENCH_DIR.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import _harness as h  # noqa: E402

if __name__ == "__main__":
    h.pin_threads()  # before numpy is imported: that is when OpenBLAS sizes its pool

import numpy as np  # noqa: E402
import peers  # noqa: E402
from peers import minimal_engine  # noqa: E402

FULL = {"w1_n": 10_000, "w2_branches": 1_000, "w2_width": 16, "mlp_repeats_factor": 10}
QUICK = {"w1_n": 300, "w2_branches": 50, "w2_width": 16, "mlp_repeats_factor": 3}
MLP = {"batch": 64, "sizes": (784, 256, 256, 10)}

W1_MUL, W1_ADD = 1.0001, 0.0001


# -- the workloads, written once for every engine with a torch-shaped API -------------------


def w1_forward(x: Any, n: int) -> Any:
    y = x
    for _ in range(n):
        y = y * W1_MUL + W1_ADD
    return y.sum()


def w2_forward(x: Any, cs: list[float], tanh: Any) -> Any:
    acc = None
    for c in cs:
        branch = tanh(x * c)
        acc = branch if acc is None else acc + branch
    return acc.sum()


def w2_constants(branches: int) -> list[float]:
    # Spread the slopes so tanh stays off its flat tails: every branch carries a real gradient.
    return [0.5 + i / branches for i in range(branches)]


def w2_x(width: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0, width, dtype=np.float32)


def w2_expected_grad(width: int, branches: int) -> np.ndarray:
    x = w2_x(width).astype(np.float64)
    return sum(c * (1.0 - np.tanh(c * x) ** 2) for c in w2_constants(branches))


def mlp_data(seed: int = 0) -> SimpleNamespace:
    rng = np.random.default_rng(seed)
    batch, sizes = MLP["batch"], MLP["sizes"]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    onehot = np.eye(sizes[-1], dtype=np.float32)[labels]
    return SimpleNamespace(params=params, x=x, labels=labels, onehot=onehot, batch=batch)


def mlp_loss(params: list[Any], x: Any, target: Any, cross_entropy: Any) -> Any:
    """Forward of the MLP in torch's API (gradviz, torch and the floor share it)."""
    w1, b1, w2, b2, w3, b3 = params
    h = (x @ w1 + b1).tanh()
    h = (h @ w2 + b2).tanh()
    return cross_entropy(h @ w3 + b3, target)


def cross_entropy_for(m: Any, data: SimpleNamespace) -> tuple[Any, Any, str]:
    """The softmax cross-entropy a user of module ``m`` would write, its target, and its name:
    the fused ``nn.functional.cross_entropy`` (class indices) where the module has one, else
    ``-(log_softmax(logits) * onehot).sum() / batch`` (a one-hot target)."""
    fused = getattr(getattr(getattr(m, "nn", None), "functional", None), "cross_entropy", None)
    if fused is not None:
        return fused, m.tensor(data.labels), "nn.functional.cross_entropy"
    batch = data.batch

    def composed(logits: Any, onehot: Any) -> Any:
        return -(logits.log_softmax(1) * onehot).sum() / batch

    return composed, m.tensor(data.onehot), "-(log_softmax * onehot).sum() / batch"


def numpy_mlp_step(params: list[np.ndarray], x: np.ndarray, onehot: np.ndarray, batch: int) -> list[np.ndarray]:
    """Forward and backward by hand: the floor for W3 (no graph at all)."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -(logp * onehot).sum() / batch
    dz = (np.exp(logp) - onehot) / batch  # softmax - onehot: each row of onehot sums to 1
    da2 = (dz @ w3.T) * (1.0 - h2 * h2)
    da1 = (da2 @ w2.T) * (1.0 - h1 * h1)
    return [loss, x.T @ da1, da1.sum(0), h1.T @ da2, da2.sum(0), h2.T @ dz, dz.sum(0)]


# -- per-engine adapters ---------------------------------------------------------------------


def _close(got: Any, want: Any, what: str, rtol: float = 1e-3) -> None:
    got = np.asarray(got, dtype=np.float64)
    if not np.allclose(got, want, rtol=rtol, atol=1e-5):
        raise AssertionError(f"{what}: got {got.ravel()[:4]}, want {np.asarray(want).ravel()[:4]}")


def torch_like(name: str, m: Any, sizes: dict[str, int]) -> dict[str, h.Impl]:
    """gradviz and torch: the same code through ``import X as torch``."""
    n, branches, width = sizes["w1_n"], sizes["w2_branches"], sizes["w2_width"]
    cs = w2_constants(branches)

    def leaf1() -> Any:
        return m.ones(1, requires_grad=True)

    def w1_built() -> tuple[Any, Any]:
        x = leaf1()
        return x, w1_forward(x, n)

    def w2_built() -> tuple[Any, Any]:
        x = m.tensor(w2_x(width), requires_grad=True)
        return x, w2_forward(x, cs, lambda t: t.tanh())

    data = mlp_data()
    params = [m.tensor(a, requires_grad=True) for a in data.params]
    x = m.tensor(data.x)
    cross_entropy, target, loss_name = cross_entropy_for(m, data)

    def mlp_step(_: Any) -> Any:
        for p in params:
            p.grad = None
        loss = mlp_loss(params, x, target, cross_entropy)
        loss.backward()
        return loss

    def check_w1() -> None:
        x, out = w1_built()
        out.backward()
        _close(x.grad.detach().numpy(), W1_MUL**n, f"{name} W1 grad")

    def check_w2() -> None:
        x, out = w2_built()
        out.backward()
        _close(x.grad.detach().numpy(), w2_expected_grad(width, branches), f"{name} W2 grad")

    def check_mlp() -> dict[str, str]:
        mlp_step(None)
        want = numpy_mlp_step(data.params, data.x, data.onehot, data.batch)
        for i, p in enumerate(params):
            _close(p.grad.detach().numpy(), want[1 + i], f"{name} W3 grad {i}")
        return {"loss": loss_name}

    return {
        "w1_forward": h.Impl(name, lambda x: w1_forward(x, n), leaf1, check_w1),
        "w1_backward": h.Impl(name, lambda built: built[1].backward(), w1_built),
        "w2_backward": h.Impl(name, lambda built: built[1].backward(), w2_built, check_w2),
        "w3_mlp": h.Impl(name, mlp_step, check=check_mlp),
    }


BASELINE_ENV = "GRADVIZ_BENCH_BASELINE"


def gradviz_variant(name: str, gradviz: Any, sizes: dict[str, int]) -> dict[str, h.Impl]:
    """torch_like for a gradviz, its checks also saying which path its engine ran: "compiled",
    "python" or "mixed" (gradviz._compiled), or "baseline" where that module does not exist."""

    def path() -> dict[str, str]:
        compiled = getattr(gradviz, "_compiled", None)
        if compiled is None:
            return {"path": "baseline (no gradviz._compiled)", "from": str(Path(gradviz.__file__).parent.parent)}
        importlib.import_module("gradviz.autograd.engine")  # status() as imported
        kinds = set(compiled.status().values())
        return {"path": kinds.pop() if len(kinds) == 1 else "mixed", "from": str(Path(gradviz.__file__).parent.parent)}

    impls = torch_like(name, gradviz, sizes)
    for impl in impls.values():
        check = impl.check

        def with_path(check: Any = check) -> dict[str, str]:
            return {**(check() or {} if check is not None else {}), **path()}

        impl.check = with_path
    return impls


class _MinimalNamespace:
    """The floor engine behind the torch-shaped names the workloads use."""

    @staticmethod
    def ones(*shape: int, requires_grad: bool = False) -> minimal_engine.T:
        return minimal_engine.T(np.ones(shape, np.float32), requires_grad=requires_grad)

    @staticmethod
    def tensor(a: np.ndarray, requires_grad: bool = False) -> minimal_engine.T:
        return minimal_engine.T(np.array(a), requires_grad=requires_grad)

    class nn:  # noqa: N801 - torch's namespace shape
        class functional:  # noqa: N801
            @staticmethod
            def cross_entropy(logits: minimal_engine.T, target: minimal_engine.T) -> minimal_engine.T:
                return logits.cross_entropy(target.data)


def minimal(sizes: dict[str, int]) -> dict[str, h.Impl]:
    impls = torch_like("minimal", _MinimalNamespace, sizes)
    ns = _MinimalNamespace
    n, branches, width = sizes["w1_n"], sizes["w2_branches"], sizes["w2_width"]

    # The floor keeps gradients as arrays, not tensors: its own checks.
    def check_w1() -> None:
        x = ns.ones(1, requires_grad=True)
        w1_forward(x, n).backward()
        _close(x.grad, W1_MUL**n, "minimal W1 grad")

    def check_w2() -> None:
        x = ns.tensor(w2_x(width), requires_grad=True)
        w2_forward(x, w2_constants(branches), lambda t: t.tanh()).backward()
        _close(x.grad, w2_expected_grad(width, branches), "minimal W2 grad")

    impls["w1_forward"].check = check_w1
    impls["w2_backward"].check = check_w2
    impls["w3_mlp"].check = lambda: {"loss": "fused cross_entropy"}
    return impls


def hips_autograd(sizes: dict[str, int]) -> dict[str, h.Impl]:
    import autograd.numpy as anp
    from autograd import grad
    from autograd.core import make_vjp
    from autograd.scipy.special import logsumexp

    n, branches, width = sizes["w1_n"], sizes["w2_branches"], sizes["w2_width"]
    cs = w2_constants(branches)
    one = np.ones((), np.float32)

    # HIPS autograd traces a function: make_vjp runs the forward, the returned vjp the backward.
    def w1_fwd(x: Any) -> Any:
        return make_vjp(lambda v: w1_forward(v, n), x)

    def w1_x() -> np.ndarray:
        return np.ones(1, np.float32)

    def w2_fwd() -> Any:
        return make_vjp(lambda v: w2_forward(v, cs, anp.tanh), w2_x(width))

    data = mlp_data()

    def loss(params: list[Any]) -> Any:
        w1, b1, w2, b2, w3, b3 = params
        hid = anp.tanh(anp.dot(data.x, w1) + b1)
        hid = anp.tanh(anp.dot(hid, w2) + b2)
        z = anp.dot(hid, w3) + b3
        return -anp.sum((z - logsumexp(z, axis=1, keepdims=True)) * data.onehot) / data.batch

    mlp_grad = grad(loss)

    def check_w1() -> None:
        _close(w1_fwd(w1_x())[0](one), W1_MUL**n, "autograd W1 grad")

    def check_w2() -> None:
        _close(w2_fwd()[0](one), w2_expected_grad(width, branches), "autograd W2 grad")

    def check_mlp() -> dict[str, str]:
        want = numpy_mlp_step(data.params, data.x, data.onehot, data.batch)
        for i, g in enumerate(mlp_grad(data.params)):
            _close(g, want[1 + i], f"autograd W3 grad {i}")
        return {"loss": "-((z - logsumexp(z)) * onehot).sum() / batch"}

    return {
        "w1_forward": h.Impl("autograd", w1_fwd, w1_x, check_w1),
        "w1_backward": h.Impl("autograd", lambda built: built[0](one), lambda: w1_fwd(w1_x())),
        "w2_backward": h.Impl("autograd", lambda built: built[0](one), w2_fwd, check_w2),
        "w3_mlp": h.Impl("autograd", lambda _: mlp_grad(data.params), check=check_mlp),
    }


def mygrad_impls(sizes: dict[str, int]) -> dict[str, h.Impl]:
    import mygrad as mg
    from mygrad.nnet.losses import softmax_crossentropy

    n, branches, width = sizes["w1_n"], sizes["w2_branches"], sizes["w2_width"]
    cs = w2_constants(branches)

    def w1_x() -> Any:
        return mg.tensor(np.ones(1, np.float32))

    def w1_built() -> Any:
        x = w1_x()
        return x, w1_forward(x, n)

    def w2_built() -> Any:
        x = mg.tensor(w2_x(width))
        return x, w2_forward(x, cs, mg.tanh)

    data = mlp_data()
    params = [mg.tensor(a) for a in data.params]

    def mlp_step(_: Any) -> Any:
        w1, b1, w2, b2, w3, b3 = params
        hid = mg.tanh(mg.matmul(data.x, w1) + b1)
        hid = mg.tanh(mg.matmul(hid, w2) + b2)
        loss = softmax_crossentropy(mg.matmul(hid, w3) + b3, data.labels)
        loss.backward()  # mygrad starts every backward from fresh gradients
        return loss

    def check_w1() -> None:
        x, out = w1_built()
        out.backward()
        _close(x.grad, W1_MUL**n, "mygrad W1 grad")

    def check_w2() -> None:
        x, out = w2_built()
        out.backward()
        _close(x.grad, w2_expected_grad(width, branches), "mygrad W2 grad")

    def check_mlp() -> dict[str, str]:
        mlp_step(None)
        want = numpy_mlp_step(data.params, data.x, data.onehot, data.batch)
        for i, p in enumerate(params):
            _close(p.grad, want[1 + i], f"mygrad W3 grad {i}")
        return {"loss": "nnet.losses.softmax_crossentropy"}

    return {
        "w1_forward": h.Impl("mygrad", lambda x: w1_forward(x, n), w1_x, check_w1),
        "w1_backward": h.Impl("mygrad", lambda built: built[1].backward(), w1_built),
        "w2_backward": h.Impl("mygrad", lambda built: built[1].backward(), w2_built, check_w2),
        "w3_mlp": h.Impl("mygrad", mlp_step, check=check_mlp),
    }


def micrograd_impls(engine: Any, sizes: dict[str, int]) -> dict[str, h.Impl]:
    n = sizes["w1_n"]
    # micrograd sorts the graph recursively: a chain of 2N nodes needs that much Python stack.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * n + 1000))

    def chain(x: Any) -> Any:
        y = x
        for _ in range(n):
            y = y * W1_MUL + W1_ADD
        return y  # a scalar already: no sum

    def built() -> Any:
        x = engine.Value(1.0)
        return x, chain(x)

    def check_w1() -> None:
        x, out = built()
        out.backward()
        _close(x.grad, W1_MUL**n, "micrograd W1 grad")

    return {
        "w1_forward": h.Impl("micrograd", chain, lambda: engine.Value(1.0), check_w1),
        "w1_backward": h.Impl("micrograd", lambda b: b[1].backward(), built),
    }


def numpy_impls() -> dict[str, h.Impl]:
    data = mlp_data()
    return {"w3_mlp": h.Impl("numpy", lambda _: numpy_mlp_step(data.params, data.x, data.onehot, data.batch))}


# -- the bench -------------------------------------------------------------------------------


def build(cfg: h.Config) -> tuple[list[h.Workload], list[h.Claim], list[h.Skip]]:
    sizes = QUICK if cfg.quick else FULL
    n, branches = sizes["w1_n"], sizes["w2_branches"]
    engines: list[dict[str, h.Impl]] = []
    skipped: list[h.Skip] = []
    # A worker builds only its own engine: gradviz's process never imports torch, nor the reverse.
    if cfg.wants("gradviz"):
        import gradviz

        engines.append(gradviz_variant("gradviz", gradviz, sizes))
    for variant in ("gradviz-pure", "gradviz-base"):
        if variant not in cfg.only_impls:
            continue  # measured only when asked for
        if variant == "gradviz-base" and not os.environ.get(BASELINE_ENV):
            skipped.append(h.Skip(variant, f"{BASELINE_ENV} names no checkout to measure"))
            continue
        if cfg.worker:
            # Before gradviz is first imported in this process: its own worker.
            if variant == "gradviz-pure":
                os.environ["GRADVIZ_PURE_PYTHON"] = "1"
            else:
                sys.path.insert(0, os.environ[BASELINE_ENV])
        import gradviz

        engines.append(gradviz_variant(variant, gradviz, sizes))
    for name, make in (
        ("torch", lambda mod: torch_like("torch", mod, sizes)),
        ("autograd", lambda mod: hips_autograd(sizes)),
        ("mygrad", lambda mod: mygrad_impls(sizes)),
        ("micrograd", lambda mod: micrograd_impls(mod, sizes)),
    ):
        if not cfg.wants(name):
            continue
        mod = peers.load(name)
        if isinstance(mod, str):
            skipped.append(h.Skip(name, mod))
        else:
            engines.append(make(mod))
    if cfg.wants("minimal"):
        engines.append(minimal(sizes))
    if cfg.wants("numpy"):
        engines.append(numpy_impls())

    def impls(key: str) -> list[h.Impl]:
        return [e[key] for e in engines if key in e]

    workloads = [
        h.Workload("w1_forward", f"W1 chain forward ({n:,} steps)", impls("w1_forward"), nodes=2 * n + 1),
        h.Workload("w1_backward", f"W1 chain backward ({n:,} steps)", impls("w1_backward"), nodes=2 * n + 1),
        h.Workload(
            "w2_backward", f"W2 fan-in backward ({branches:,} branches)", impls("w2_backward"),
            nodes=3 * branches, note="micrograd works on scalars: no W2",
        ),
        h.Workload(
            "w3_mlp", "W3 MLP step (64×784-256-256-10)", impls("w3_mlp"),
            note="micrograd works on scalars: no W3; each engine's own softmax cross-entropy (below)",
            repeats_factor=sizes["mlp_repeats_factor"], rewarm=True,
        ),
    ]
    # Issue 32's goals.
    claims = [
        h.Claim("W1 backward at most 0.8× torch", "w1_backward", "torch", 0.8),
        h.Claim("W2 backward within 1.2× of torch", "w2_backward", "torch", 1.2),
        h.Claim("W1 forward within 1.2× of torch", "w1_forward", "torch", 1.2),
        h.Claim("W3 MLP step within 1.2× of hand-written numpy", "w3_mlp", "numpy", 1.2),
    ]
    return workloads, claims, skipped


def variant_ratios(result: dict) -> list[str]:
    """Each gradviz variant's ratio of medians to torch and numpy (the tables give the subject's
    only): the pure path's and the baseline's figures beside the claims."""
    lines = []
    for w in result.get("workloads", []):
        res = w["results"]
        for name in ("gradviz", "gradviz-pure", "gradviz-base"):
            if name not in res:
                continue
            parts = [f"{res[name]['median_ms'] / res[peer]['median_ms']:.2f}× {peer}" for peer in ("torch", "numpy")
                     if peer in res]
            path = (w.get("facts") or {}).get(name, {}).get("path", "?")
            lines.append(f"- {w['title']}: {name} ({path}): {', '.join(parts)}")
    return lines


def main(argv: list[str] | None = None) -> dict:
    result = h.main("engine", __doc__.split("\n\n")[0], build, repeats=15, warmup=2, argv=argv)
    lines = variant_ratios(result)
    if lines:
        print("\nEach gradviz's ratios of medians:\n\n" + "\n".join(lines))
    return result


if __name__ == "__main__":
    main()
