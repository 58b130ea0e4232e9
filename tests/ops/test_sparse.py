"""Sparse COO tensors, torch.diag, F.elu / nn.ELU and the legacy constructors' numpy arrays
against torch 2.13: values, printing, gradients, backward node names and next_functions, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz

# torch's constructor warns once per process that invariant checks are off; gradviz does too
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

RNG = np.random.default_rng(0)
DENSE = np.array([[0.5, 0, 2.0, 0], [0, 0, -3.0, 1.25], [4.0, 0, 0, 0]], np.float32)
IDX = np.array([[0, 1, 0, 2], [1, 2, 1, 0]], np.int32)  # (0, 1) twice: uncoalesced
VALS = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def graph(fn: Any) -> list:
    """(name, next_functions' names) of every node reachable from fn, depth first."""
    out, seen, stack = [], set(), [fn]
    while stack:
        f = stack.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        nexts = [(g.name().split("::")[-1] if g is not None else None, i) for g, i in f.next_functions]
        out.append((f.name().split("::")[-1], nexts))
        stack.extend(g for g, _ in f.next_functions)
    return out


def both(fn: Any) -> tuple[Any, Any]:
    return fn(gradviz), fn(torch)


def same_text(ours: str, theirs: str) -> None:
    assert ours.replace("gradviz.", "torch.") == theirs


def assert_same(ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            assert a.dtype == b.dtype
        elif isinstance(a, str):
            same_text(a, b)
        else:
            assert a == b


def _coo(m: Any, **kw: Any) -> Any:
    return m.sparse_coo_tensor(IDX, m.tensor(VALS), (3, 4), **kw)


# -- construction, accessors, printing -----------------------------------------------------------


def test_construction_and_accessors() -> None:
    def run(m: Any) -> list:
        s = _coo(m)
        c = s.coalesce()
        i64 = m.sparse_coo_tensor(IDX, m.ones(4), (3, 4), dtype=m.int64)
        inferred = m.sparse_coo_tensor(m.tensor([[0, 3], [1, 1]]), m.tensor([1.0, 2.0]))
        return [
            str(s.layout), str(m.ones(2).layout), s.is_sparse, m.ones(2).is_sparse, s.is_coalesced(),
            c.is_coalesced(), s._nnz(), c._nnz(), s.sparse_dim(), s.dense_dim(), tuple(s.shape), str(s.dtype),
            s._indices().numpy(), s._values().numpy(), c.indices().numpy(), c.values().numpy(),
            s.to_dense().numpy(), str(i64.dtype), i64.to_dense().numpy(), tuple(inferred.shape), s.dim(), s.numel(),
            repr(s), repr(c), repr(i64), str(inferred),
        ]

    assert_same(*both(run))


def test_to_sparse_and_printing() -> None:
    def run(m: Any) -> list:
        d = m.tensor(DENSE)
        sp = d.to_sparse()
        hybrid = d.to_sparse(1)
        empty = m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.int64), m.zeros(0), (2, 2))
        f64 = m.tensor(DENSE, dtype=m.float64).to_sparse()
        big = m.arange(2000.0).reshape(2, 1000).to_sparse()
        scalars = repr(m.tensor(3.0).to_sparse()) + repr(m.tensor(0.0).to_sparse())
        req = m.sparse_coo_tensor(m.tensor([[0, 1]]), m.tensor([1.0, 2.0]), (3,), requires_grad=True)
        return [sp.is_coalesced(), sp.indices().numpy(), sp.values().numpy(), hybrid.values().numpy(),
                hybrid.sparse_dim(), hybrid.dense_dim(), hybrid.to_dense().numpy(), repr(sp), repr(hybrid),
                repr(empty), repr(f64), repr(big), repr(req), scalars]

    assert_same(*both(run))


def test_coalesce_sums_duplicates_and_to_same_device_is_identity() -> None:
    def run(m: Any) -> list:
        s = _coo(m)
        return [s.coalesce().values().numpy(), s.to("cpu") is s, s.to(m.float64).dtype == m.float64,
                s.to(m.float64).to_dense().numpy()]

    assert_same(*both(run))


@pytest.mark.parametrize("case", ["nnz", "size_len", "uncoalesced_indices", "uncoalesced_values", "add_sparse_dense",
                                  "dense_sparse_shape", "mm_shape", "to_dense_view", "numpy", "mm_hybrid"])
def test_errors(case: str) -> None:
    def run(m: Any) -> tuple[str, str]:
        try:
            if case == "nnz":
                m.sparse_coo_tensor(m.tensor([[0, 1, 2]]), m.tensor([1.0, 2.0]), (3,))
            elif case == "size_len":
                m.sparse_coo_tensor(m.tensor([[0, 1], [1, 0]]), m.tensor([1.0, 2.0]), (3,))
            elif case == "uncoalesced_indices":
                _coo(m).indices()
            elif case == "uncoalesced_values":
                _coo(m).values()
            elif case == "add_sparse_dense":
                _coo(m) + m.tensor(DENSE)
            elif case == "dense_sparse_shape":
                m.ones(3, 3) + _coo(m)
            elif case == "mm_shape":
                m.mm(_coo(m), m.ones(3, 2))
            elif case == "to_dense_view":
                _coo(m).view(12)
            elif case == "numpy":
                _coo(m).numpy()
            elif case == "mm_hybrid":
                m.mm(m.ones(2, 3).to_sparse(1), m.ones(3, 2))
        except Exception as e:  # noqa: BLE001 - the type and message are what is compared
            return type(e).__name__, str(e).split(" with arguments")[0]
        return "no error", ""

    ours, theirs = both(run)
    if case == "to_dense_view":
        # torch's NotImplementedError names its aten op; gradviz's (a subclass) the array attribute it lacks
        assert theirs[0] == "NotImplementedError" and ours[0] == "SparseNotImplementedError"
        assert issubclass(gradviz._sparse_coo.SparseNotImplementedError, NotImplementedError)
        return
    assert ours == theirs


# -- products and sums --------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["mm", "spmm", "matmul", "operator", "dense_left", "sparse_sparse", "addmm"])
def test_products(how: str) -> None:
    def run(m: Any) -> list:
        s = _coo(m)
        w = m.tensor(W, requires_grad=True)
        if how == "mm":
            y = m.mm(s, w)
        elif how == "spmm":
            y = m.spmm(s, w)
        elif how == "matmul":
            y = m.matmul(s, w)
        elif how == "operator":
            y = s @ w
        elif how == "dense_left":
            y = m.mm(w.t(), s.t())
        elif how == "sparse_sparse":
            p = m.mm(s, s.t())
            return [p.layout == m.sparse_coo, p.to_dense().numpy(), repr(p)]
        else:
            y = m.addmm(m.ones(3, 3), s, w)
        (y * m.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return [y.detach().numpy(), w.grad.numpy(), graph(y.grad_fn)]

    assert_same(*both(run))


def test_sparse_leaf_gets_a_dense_gradient_and_the_dense_one_its_product() -> None:
    def run(m: Any) -> list:
        s = m.tensor(DENSE).to_sparse().requires_grad_()
        w = m.tensor(W, requires_grad=True)
        y = m.mm(s, w)
        (y * y).sum().backward()
        return [s.grad.layout == m.strided, s.grad.numpy(), w.grad.numpy(), graph(y.grad_fn)]

    assert_same(*both(run))


def test_dense_plus_sparse() -> None:
    def run(m: Any) -> list:
        s = m.sparse_coo_tensor(IDX, m.ones(4), (3, 4), dtype=m.int64)
        eye = m.eye(3, 4) + s  # float + int64 sparse: a dense float32, as the GCN example builds it
        d = m.tensor(DENSE, requires_grad=True)
        v = m.tensor(VALS, requires_grad=True)
        r = d + m.sparse_coo_tensor(IDX, v, (3, 4))
        r2 = d - _coo(m)
        (r * r).sum().backward()
        return [eye.numpy(), str(eye.dtype), eye.layout == m.strided, r.detach().numpy(), r2.detach().numpy(),
                d.grad.numpy(), v.grad.numpy(), graph(r.grad_fn), graph(r2.grad_fn)]

    assert_same(*both(run))


def test_sparse_plus_sparse_scaling_and_views() -> None:
    def run(m: Any) -> list:
        v = m.tensor(VALS, requires_grad=True)
        s = m.sparse_coo_tensor(IDX, v, (3, 4))
        outs = [s + s, s * 2, 2 * s, -s, s / 4, s.t(), s.transpose(0, 1), s.clone(), s * m.tensor(DENSE)]
        total = sum((o.to_dense() * (k + 1)).sum() for k, o in enumerate(outs))
        full = s.sum()
        (total + full).backward()
        return [*(o.to_dense().detach().numpy() for o in outs), [o.is_coalesced() for o in outs],
                full.detach().numpy(), v.grad.numpy(), *(graph(o.grad_fn) for o in outs), graph(full.grad_fn),
                s.detach().requires_grad, s.detach().is_sparse]

    assert_same(*both(run))


# -- sparse autograd nodes ------------------------------------------------------------------------


def test_constructor_conversion_and_coalesce_nodes() -> None:
    def run(m: Any) -> list:
        v = m.tensor(VALS, requires_grad=True)
        s = m.sparse_coo_tensor(IDX, v, (3, 4))
        c = s.coalesce()
        dense = c.to_dense()
        vals = c.values()
        d = m.tensor(DENSE, requires_grad=True)
        back = d.to_sparse().to_dense()
        weights = m.arange(12.0).reshape(3, 4)
        ((dense * weights).sum() + (vals * vals).sum() + (back * weights).sum()).backward()
        return [v.grad.numpy(), d.grad.numpy(), graph(dense.grad_fn), graph(vals.grad_fn), graph(back.grad_fn),
                s._values().grad_fn is None]

    assert_same(*both(run))


def test_program_pipeline_gcn() -> None:
    """The GCN example's preprocessing and two layers: diag, to_sparse, sparse @ dense, spmm."""

    def run(m: Any) -> list:
        m.manual_seed(0)
        feats = m.tensor(DENSE)
        scale = 1 / m.sum(feats.abs(), dim=1)
        feats = m.diag(scale).to_sparse() @ feats
        adj = m.eye(3) + m.sparse_coo_tensor(np.array([[0, 1, 2], [1, 2, 0]], np.int32), m.ones(3), (3, 3),
                                            dtype=m.int64)
        deg = m.diag(m.sqrt(1 / m.sum(adj, dim=1))).to_sparse()
        adj = (deg @ adj @ deg).to_sparse()
        w1 = m.tensor(W, requires_grad=True)
        h = m.spmm(adj, m.mm(feats.to_sparse(), w1))
        loss = m.nn.functional.log_softmax(h, dim=1).sum()
        loss.backward()
        return [feats.numpy(), adj.to_dense().numpy(), h.detach().numpy(), w1.grad.numpy(), graph(loss.grad_fn)]

    assert_same(*both(run))


# -- diag -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [0, 1, -2])
@pytest.mark.parametrize("ndim", [1, 2])
def test_diag(offset: int, ndim: int) -> None:
    def run(m: Any) -> list:
        x = m.tensor(DENSE if ndim == 2 else VALS, requires_grad=True)
        y = m.diag(x, offset)
        (y * m.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return [y.detach().numpy(), x.grad.numpy(), graph(y.grad_fn)]

    assert_same(*both(run))


def test_diag_double_backward_and_errors() -> None:
    def run(m: Any) -> list:
        x = m.tensor(VALS.astype(np.float64), requires_grad=True)
        sq = m.tensor(DENSE[:, :3].astype(np.float64), requires_grad=True)
        (g,) = m.autograd.grad((m.diag(x, 1) ** 2).sum(), x, create_graph=True)
        (g2,) = m.autograd.grad((m.diag(sq) ** 3).sum(), sq, create_graph=True)
        (g.sum() + g2.sum()).backward()
        try:
            m.diag(m.ones(2, 2, 2))
            err = ""
        except RuntimeError as e:
            err = str(e)
        return [g.detach().numpy(), g2.detach().numpy(), x.grad.numpy(), sq.grad.numpy(), err]

    assert_same(*both(run))


def test_diag_embed() -> None:
    def run(m: Any) -> list:
        x = m.tensor(RNG_FIXED, requires_grad=True)
        y = m.diag_embed(x, 1, 0, 2)
        (y * m.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return [y.detach().numpy(), x.grad.numpy(), graph(y.grad_fn)]

    assert_same(*both(run))


RNG_FIXED = RNG.standard_normal((2, 3)).astype(np.float32)


# -- elu --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("how", ["functional", "module", "inplace", "module_inplace"])
def test_elu(alpha: float, how: str) -> None:
    def run(m: Any) -> list:
        x = m.tensor(DENSE - 1, requires_grad=True)
        if how == "functional":
            y = m.nn.functional.elu(x, alpha)
        elif how == "module":
            y = m.nn.ELU(alpha)(x)
        else:
            y = x * 1
            if how == "inplace":
                m.nn.functional.elu(y, alpha, inplace=True)
            else:
                m.nn.ELU(alpha, inplace=True)(y)
        (y * m.arange(12.0).reshape(3, 4)).sum().backward()
        return [y.detach().numpy(), x.grad.numpy(), graph(y.grad_fn), repr(m.nn.ELU(alpha, how == "module_inplace"))]

    assert_same(*both(run))


def test_elu_gradcheck_and_errors() -> None:
    x = gradviz.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert gradviz.autograd.gradcheck(lambda t: gradviz.nn.functional.elu(t, 0.7), (x,))

    def run(m: Any) -> tuple[str, str]:
        try:
            m.nn.functional.elu(m.tensor([1, 2]))
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return "no error", ""

    assert_same(*both(run))


# -- legacy constructors of numpy arrays ---------------------------------------------------------------


def test_legacy_constructor_of_ndarray() -> None:
    def run(m: Any) -> list:
        shared = np.array([1.0, 2.0], np.float32)
        t = m.FloatTensor(shared)
        shared[0] = 5
        out = [t.numpy().copy(), m.FloatTensor(np.array([[1, 2]], np.int32)).numpy(),
               m.LongTensor(np.array([3, 4])).numpy(), str(m.LongTensor(np.array([3, 4])).dtype)]
        try:
            m.FloatTensor(np.array(["a"]))
        except TypeError as e:
            out.append(str(e))
        return out

    assert_same(*both(run))


# -- torch.sparse -------------------------------------------------------------------------------------


def test_sparse_namespace_mm_and_sum() -> None:
    def run(m: Any) -> list:
        v = m.tensor(VALS, requires_grad=True)
        s = m.sparse_coo_tensor(IDX, v, (3, 4))
        w = m.tensor(W, requires_grad=True)
        y = m.sparse.mm(s, w)
        full = m.sparse.sum(s)
        rows = m.sparse.sum(s, dim=1)
        every = m.sparse.sum(s, dim=(0, 1))
        total = (y * y).sum() + full + (rows.to_dense() * m.tensor([1.0, 2.0, 3.0])).sum() + every
        total.backward()
        leaf = m.tensor(DENSE).to_sparse().requires_grad_()
        m.sparse.mm(leaf, w.detach()).sum().backward()
        return [y.detach().numpy(), full.detach().numpy(), rows.to_dense().detach().numpy(),
                every.detach().numpy(), v.grad.numpy(), w.grad.numpy(), repr(leaf.grad), repr(rows),
                graph(total.grad_fn), repr(m.sparse.sum(s.detach(), dtype=m.float64))]

    assert_same(*both(run))


def test_invariant_checks_and_second_backward() -> None:
    def run(m: Any) -> list:
        out = [m.sparse.check_sparse_tensor_invariants.is_enabled()]
        with m.sparse.check_sparse_tensor_invariants():
            out.append(m.sparse.check_sparse_tensor_invariants.is_enabled())
            for idx in ([[0, 5]], [[0, -1]]):
                try:
                    m.sparse_coo_tensor(m.tensor(idx), m.tensor([1.0, 2.0]), (3,))
                except RuntimeError as e:
                    out.append(str(e))
        out.append(m.sparse.check_sparse_tensor_invariants.is_enabled())
        v = m.tensor(VALS, requires_grad=True)
        s = m.sparse_coo_tensor(IDX, v, (3, 4), check_invariants=False)
        s.to_dense().sum().backward()
        try:
            s.to_dense().sum().backward()
        except RuntimeError as e:
            out.append(str(e))
        return out

    assert_same(*both(run))


def test_execution_order_and_recording_with_sparse_gradients() -> None:
    """Sparse gradients through the engine (InputBuffer sums dense and sparse ones) in torch's
    order, and the recorder summarising them."""

    def run(m: Any) -> list:
        v = m.tensor(VALS, requires_grad=True)
        s = m.sparse_coo_tensor(IDX, v, (3, 4), check_invariants=False)
        w = m.tensor(W, requires_grad=True)
        loss = (m.sparse.mm(s, w).sum() + s.to_dense().sum() + m.sparse.sum(s) + m.mm(s, w).sum()
                + (m.eye(3, 4) + s).sum())
        order, seen, stack = [], set(), [loss.grad_fn]
        while stack:
            f = stack.pop()
            if f is None or f in seen:
                continue
            seen.add(f)
            f.register_prehook(lambda g, f=f: order.append(f.name().split("::")[-1]))
            stack.extend(n for n, _ in f.next_functions)
        if m is gradviz:
            with gradviz.record(values=True) as rec:
                loss.backward()
            assert rec.trace.execution_order() == order
        else:
            loss.backward()
        return [order, v.grad.numpy(), w.grad.numpy()]

    assert_same(*both(run))


def test_sparse_mask() -> None:
    def run(m: Any) -> list:
        d = m.tensor(DENSE * 3 + 1, requires_grad=True)
        r = d.sparse_mask(m.tensor(DENSE).to_sparse())
        r2 = d.sparse_mask(_coo(m))  # an uncoalesced mask: its indices kept as they are
        ((r.to_dense() + r2.to_dense()) * m.arange(12.0).reshape(3, 4)).sum().backward()
        errors = []
        for other in (m.ones(3, 4), m.ones(2, 4).to_sparse()):
            try:
                d.sparse_mask(other)
            except (RuntimeError, NotImplementedError) as e:
                errors.append((type(e).__name__, str(e).split(" This could")[0]))
        return [repr(r), repr(r2), d.grad.numpy(), graph(r.grad_fn), errors]

    assert_same(*both(run))


def test_accumulate_grad_of_sparse_gradients_and_coalesced_sums() -> None:
    """.grad of a sparse leaf: sparse + sparse (merged when both are coalesced), then dense +
    sparse once a dense gradient arrives; a dense leaf takes sparse gradients as dense + sparse."""

    def run(m: Any) -> list:
        leaf = m.tensor(DENSE[:2, :3]).to_sparse().requires_grad_()
        w = m.tensor(W[:3, :2], requires_grad=True)
        out = []
        for _ in range(2):
            m.sparse.mm(leaf, w).sum().backward()
            out.append(repr(leaf.grad))
        m.mm(leaf, w).sum().backward()
        out.append(repr(leaf.grad))
        d = m.zeros(3, 4, requires_grad=True)
        for _ in range(2):
            d.sparse_mask(_coo(m)).to_dense().sum().backward()
        a, b = m.tensor([[1.0, 0, 2], [0, 3, 0]]).to_sparse(), m.tensor([[-1.0, 0, 0], [4, 0, 0]]).to_sparse()
        return [*out, d.grad.numpy(), repr(a + b), repr(a - b), w.grad.numpy()]

    assert_same(*both(run))
