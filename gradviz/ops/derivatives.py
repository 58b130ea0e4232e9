"""The derivative table: one row per op, one gradient formula per forward input.

Each formula takes the node (``n["name"]`` unpacks a saved value, checking its version) and the
gradient of the op's output ``g`` (for multi-output rows, the list of output gradients, None
where an output got no gradient), and returns the gradient of one input. ``None`` in place of a
formula means the input is not differentiable. Formulas use differentiable ops, so a backward
run with ``create_graph=True`` records its own graph. Names are checked against torch 2.13.
"""

from __future__ import annotations

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import functions as F
from gradviz.ops.core import Derivative as D
from gradviz.tensor import Tensor

# Formulas written with tensor ops build the graph a create_graph=True backward needs. Without
# one (grad mode off in the engine: create_graph=False), the hot ones compute on the arrays
# directly and make one tensor: no views, no intermediate tensors, no per-op dispatch. The
# numbers are the same (the same numpy operations in the same order).
_wrap = Tensor._wrap


def _out(data, g):
    """The gradient tensor over ``data``: g's dtype and device when numpy kept them (always, for
    gradients that arrive validated), else what the data says (0-d results, cupy arrays)."""
    dt = g.dtype
    if type(data) is np.ndarray and data.dtype is dt.np:
        return _wrap(data, dt, g.device)
    return F._new(data, g.device)


def _saved_data(n, key):
    """The array of saved tensor ``key``, with unpack's checks (released, modified in place)
    but without the tensor unpack builds for a saved output."""
    v = n.saved[key]
    t = v.tensor
    if t is not None and not v.released and t._version_counter[0] == v.version:
        return t._data
    return n[key]._data  # raises unpack's error


def _number_fast(g, c) -> bool:
    """Whether g * c may skip the tensor op: no graph to build, c a Python int or float, g
    floating (numpy then keeps g's dtype, torch's result for a wrapped number)."""
    tc = type(c)
    return not _grad_state.enabled and (tc is float or tc is int) and g.dtype.is_floating_point


def _mul_other(n, g):
    # MulBackward0, self's gradient: grad * other (a saved tensor, or the number itself)
    other = n.saved["other"]
    tc = type(other)
    if tc is float or tc is int:
        dt = g.dtype
        if not _grad_state.enabled and dt.is_floating_point:  # _number_fast, and _out inline
            data = g._data * other
            if type(data) is np.ndarray and data.dtype is dt.np:
                return _wrap(data, dt, g.device)
            return F._new(data, g.device)
        return F.mul(g, other)
    return F.mul(g, n["other"])  # a SavedVariable unpacked, or a released number's error


def _mul_scalar(n, g):
    # MulBackward1: grad * other, recorded (under create_graph) as torch's MulBackward1 again
    other = n.saved["other"]
    if _number_fast(g, other):
        return _out(g._data * other, g)
    return F.mul_scalar(g, other)


# 1 as a 0-d array of each floating dtype: ``one - y * y`` then costs numpy an array-array
# subtraction (0.26 us on 16 floats) instead of converting a Python scalar (0.48 us), and gives
# the same floats (the Python 1 becomes the same exact one in y's dtype).
_ONE = {np.dtype(t): np.array(1, t) for t in (np.float16, np.float32, np.float64)}
for _one in _ONE.values():
    _one.flags.writeable = False
# The size from which the kernels build their result with out= (see functions.py, which takes
# it from here: the table is imported before the kernels exist).
_OUT_MIN = 4096


def _tanh(n, g):
    if not _grad_state.enabled:
        # _saved_data, the kernel and _out inline (W2 runs this a thousand times on 16 floats,
        # where each Python call is a tenth of the node).
        v = n.saved["result"]
        t = v.tensor
        if t is not None and not v.released and t._version_counter[0] == v.version:
            y = t._data
            if type(y) is np.ndarray and y.size < _OUT_MIN and (one := _ONE.get(y.dtype)) is not None:
                data = g._data * (one - y * y)
            else:
                data = F._tanh_backward_kernel(g._data, y)
            dt = g.dtype
            if type(data) is np.ndarray and data.dtype is dt.np:
                return _wrap(data, dt, g.device)
            return F._new(data, g.device)
        return _out(F._tanh_backward_kernel(g._data, n["result"]._data), g)  # raises unpack's error
    return F.tanh_backward(g, n["result"])


def _sigmoid(n, g):
    if not _grad_state.enabled:
        return _out(F._sigmoid_backward_kernel(g._data, _saved_data(n, "result")), g)
    return F.sigmoid_backward(g, n["result"])


def _softmax(n, g):
    if not _grad_state.enabled:
        data = F._softmax_backward_kernel(g._data, _saved_data(n, "result"), n.saved["dim"])
        return _out(data, g)
    return F.softmax_backward_data(g, n["result"], n["dim"])


def _log_softmax(n, g):
    if not _grad_state.enabled:
        data = F._log_softmax_backward_kernel(g._data, _saved_data(n, "result"), n.saved["dim"])
        return _out(data, g)
    return F.log_softmax_backward_data(g, n["result"], n["dim"])


def _relu(n, g):
    if not _grad_state.enabled:
        return _out(F._threshold_backward_kernel(g._data, _saved_data(n, "result"), 0.0), g)
    return F.threshold_backward(g, n["result"], 0.0)

# Where torch's C++ formula is ``a * b`` with two computed operands, the compiler evaluates the
# right one first; so do these (it decides the numbering of a create_graph backward's nodes).


def _div_other(n, g):
    # -grad * ((self / other) / other)
    q = F.div(F.div(n["self"], n["other"]), n["other"])
    return F.mul(F.neg(g), q)


def _reciprocal(n, g):
    # -grad * (result * result)
    rr = F.mul(n["result"], n["result"])
    return F.mul(F.neg(g), rr)


def _mm_mat1(n, g):
    # torch's mm_mat1_backward: a column-major self gets its gradient column-major too.
    if not _grad_state.enabled:
        # No graph to build: one product on the arrays, one tensor (not two views and an mm).
        m2 = _saved_data(n, "mat2")
        data = (m2 @ g._data.T).T if n.saved["self_colmajor"] else g._data @ m2.T
        return _out(data, g)
    if n["self_colmajor"]:
        return F.t(F.mm(n["mat2"], F.t(g)))
    return F.mm(g, F.t(n["mat2"]))


def _mm_mat2(n, g):
    if not _grad_state.enabled:
        m1 = _saved_data(n, "self")
        data = (g._data.T @ m1).T if n.saved["mat2_colmajor"] else m1.T @ g._data
        return _out(data, g)
    if n["mat2_colmajor"]:
        return F.t(F.mm(F.t(g), n["self"]))
    return F.mm(F.t(n["self"]), g)


def _add_other(n, g):
    # AddBackward0, other's gradient: grad * alpha, most often alpha 1 (checked here first: one
    # call fewer on every add node)
    alpha = n.saved["alpha"]
    return g if alpha == 1 else _maybe_multiply(g, alpha)


def _maybe_multiply(g, alpha):
    if alpha == 1:
        return g
    if _number_fast(g, alpha):
        return _out(g._data * alpha, g)
    return F.mul_scalar(g, alpha)


def _zero_scalar(g):
    # torch's at::zeros({}, grad.options()): a 0-dim zero that broadcasts
    return F.zeros_for((), g.dtype, g.device)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _zeros(n, g):
    return F.zeros_for(g.shape, g.dtype, g.device)


def _softmax_double_backward(n, g):
    # d/dy of y * (go - sum(go * y)) against g: g * (go - sum(go * y)) - go * sum(g * y)
    go, y, dim = n["grad_output"], n["output"], n["dim"]
    return F.sub(F.mul(g, F.sub(go, F.sum(F.mul(go, y), dim, True))), F.mul(go, F.sum(F.mul(g, y), dim, True)))


def _max_all(n, g):
    # torch's evenly_distribute_backward (CPU): ties share the gradient evenly.
    mask = F.eq(n["self"], n["result"])
    zeros = F.zeros_for(n["self"].shape, g.dtype, g.device)
    return F.masked_fill(zeros, mask, F.div(g, F.sum(mask)))


def _amaxmin_grad(n, g):
    # torch's scale_grad_by_count: ties share the gradient evenly.
    dims, x, r = n["dim"], n["self"], n["result"]
    if not n["keepdim"]:
        g = F.unsqueeze_dims(g, dims, x.ndim)
        r = F.unsqueeze_dims(r, dims, x.ndim)
    mask = F.eq(r, x)
    return F.mul(F.div(g, F.sum(mask, dims, True)), mask)


def _select_dim(n, grads):
    # torch's value_selecting_reduction_backward: scatter the gradient into zeros at the indices.
    g = grads[0]
    if g is None:
        return None
    dim, idx = n["dim"], n["indices"]
    if not n["keepdim"]:
        g = F.unsqueeze(g, dim)
        idx = F.unsqueeze(idx, dim)
    return F.scatter(F.zeros_for(n["shape"], g.dtype, g.device), dim, idx, g)


def _reduced_back(n, g):
    """g with the reduced dims put back (size 1), so that it broadcasts against the input."""
    dims = n["dim"]
    if dims is not None and not n["keepdim"]:
        g = F.unsqueeze_dims(g, dims, n["self"].ndim)
    return g


def _var(n, g):
    # torch's var_backward: (2 / dof) * grad * (self - self.mean(...)); the all-reduce form uses
    # a plain mean, the dim form a keepdim mean and unsqueezes grad back (for ndim > 1).
    x, dims = n["self"], n["dim"]
    if dims is None or x.ndim == 0:
        centered = F.sub(x, F.mean(x))
    else:
        if not n["keepdim"] and x.ndim > 1:
            g = F.unsqueeze_dims(g, dims, x.ndim)
        centered = F.sub(x, F.mean(x, dims, True))
    return F.mul(F.mul_scalar(g, 2.0 / n["denom"]), centered)


def _std(n, g):
    # torch's std_backward: var_backward(grad / (result * 2) with 0 where result == 0)
    r = n["result"]
    return _var(n, F.masked_fill(F.div(g, F.mul_scalar(r, 2.0)), F.eq(r, 0.0), 0.0))


def _zeros_filled(grads, like_shapes, dtype, device):
    return [g if g is not None else F.zeros_for(s, dtype, device) for g, s in zip(grads, like_shapes, strict=True)]


def _split(n, grads):
    parts = _zeros_filled(grads, n["sizes"], n["dtype"], n["device"])
    return F.cat(parts, n["dim"])


def _unbind(n, grads):
    parts = _zeros_filled(grads, n["sizes"], n["dtype"], n["device"])
    return F.stack(parts, n["dim"])


def _sum_dim(n, g):
    if not n["keepdim"]:
        g = F.unsqueeze_dims(g, n["dim"], len(n["shape"]))
    return F.expand(g, n["shape"])


def _mean_dim(n, g):
    return F.div_scalar(_sum_dim(n, g), n["count"])


def _pow_tensor_self(n, g):
    x, e = n["self"], n["exponent"]
    return F.where(F.eq(e, 0.0), _zero_scalar(g), F.mul(g, F.mul(e, F.pow(x, F.sub_scalar(e, 1)))))


def _pow_tensor_exponent(n, g):
    # d/de x**e = x**e * log(x); torch masks the 0**e (e >= 0) points to 0 instead of NaN.
    x, e, r = n["self"], n["exponent"], n["result"]
    cond = F.logical_and(F.eq(x, 0.0), F.ge(e, 0.0))
    return F.mul(g, F.where(cond, _zero_scalar(g), F.mul(r, F.log(x))))


def _maxmin(lose: str):
    # torch: where(self == other, grad / 2, grad).masked_fill_(self < other, 0) (and the mirror);
    # ``lose`` names the comparison (looked up late: the table is built while F is importing).
    def grad(n, g):
        a, b = n["self"], n["other"]
        return F.masked_fill(F.where(F.eq(a, b), F.div_scalar(g, 2), g), getattr(F, lose)(a, b), 0.0)

    return grad


DERIVATIVES: dict[str, D] = {
    # arithmetic (gradients summed back over broadcast dims; order=(1, 0): "other" runs first)
    "add": D("AddBackward0", (lambda n, g: g, _add_other),
             reduce_broadcast=True, order=(1, 0)),
    "sub": D("SubBackward0", (lambda n, g: g, lambda n, g: _maybe_multiply(F.neg(g), n["alpha"])),
             reduce_broadcast=True, order=(1, 0)),
    "rsub": D("RsubBackward1", (lambda n, g: _maybe_multiply(F.neg(g), n["alpha"]),), reduce_broadcast=True),
    # The Scalar overloads: what torch's C++ formulas use with a number (user code gets add/mul/...)
    "add_scalar": D("AddBackward1", (lambda n, g: g,)),
    "sub_scalar": D("SubBackward1", (lambda n, g: g,)),
    "div_scalar": D("DivBackward1", (lambda n, g: F.div_scalar(g, n["other"]),)),
    "mul_scalar": D("MulBackward1", (_mul_scalar,)),
    "mul": D("MulBackward0", (_mul_other, lambda n, g: F.mul(g, n["self"])),
             reduce_broadcast=True, order=(1, 0)),
    "div": D("DivBackward0", (
        lambda n, g: F.div(g, n["other"]),
        _div_other,
    ), reduce_broadcast=True, order=(1, 0)),
    "pow_scalar": D("PowBackward0", (
        lambda n, g: F.zeros_for(g.shape, g.dtype, g.device) if n["exponent"] == 0
        else F.mul(g, F.mul_scalar(F.pow(n["self"], n["exponent"] - 1), n["exponent"])),
    )),
    "pow_tensor": D("PowBackward1", (_pow_tensor_self, _pow_tensor_exponent), reduce_broadcast=True, order=(1, 0)),
    "pow_base": D("PowBackward2", (lambda n, g: F.mul(g, F.mul_scalar(n["result"], n["log_base"])),)),
    "maximum": D("MaximumBackward0", (_maxmin("lt"), _maxmin("gt")), reduce_broadcast=True, order=(1, 0)),
    "minimum": D("MinimumBackward0", (_maxmin("gt"), _maxmin("lt")), reduce_broadcast=True, order=(1, 0)),
    "masked_fill": D("MaskedFillBackward0", (lambda n, g: F.masked_fill(g, n["mask"], 0.0),)),
    "masked_fill_tensor": D("MaskedFillBackward1", (
        lambda n, g: F.masked_fill(g, n["mask"], 0.0),
        lambda n, g: F.sum(F.where(n["mask"], g, _zero_scalar(g))),
    ), reduce_broadcast=True),
    "scatter": D("ScatterBackward0", (
        lambda n, g: F.scatter(g, n["dim"], n["index"], F.zeros_for(n["index"].shape, g.dtype, g.device)),
        lambda n, g: F.gather(g, n["dim"], n["index"]),
    )),
    "scatter_add": D("ScatterAddBackward0", (lambda n, g: g, lambda n, g: F.gather(g, n["dim"], n["index"]))),
    "gather": D("GatherBackward0", (
        lambda n, g: F.scatter_add(F.zeros_for(n["shape"], g.dtype, g.device), n["dim"], n["index"], g),
    )),
    "where": D("WhereBackward0", (
        lambda n, g: F.where(n["condition"], g, _zero_scalar(g)),
        lambda n, g: F.where(n["condition"], _zero_scalar(g), g),
    ), reduce_broadcast=True, order=(1, 0)),
    # pointwise
    "neg": D("NegBackward0", (lambda n, g: F.neg(g),)),
    "abs": D("AbsBackward0", (lambda n, g: F.mul(g, F.sgn(n["self"])),)),
    "sign": D("SignBackward0", (_zeros,)),
    "sgn": D("SgnBackward0", (_zeros,)),
    "sqrt": D("SqrtBackward0", (lambda n, g: F.div(g, F.mul_scalar(n["result"], 2.0)),)),
    "exp": D("ExpBackward0", (lambda n, g: F.mul(g, n["result"]),)),
    "log": D("LogBackward0", (lambda n, g: F.div(g, n["self"]),)),
    "log1p": D("Log1PBackward0", (lambda n, g: F.div(g, F.add_scalar(n["self"], 1.0)),)),
    "sin": D("SinBackward0", (lambda n, g: F.mul(g, F.cos(n["self"])),)),
    "cos": D("CosBackward0", (lambda n, g: F.mul(g, F.neg(F.sin(n["self"]))),)),
    "tanh": D("TanhBackward0", (_tanh,)),
    "sigmoid": D("SigmoidBackward0", (_sigmoid,)),
    "relu": D("ReluBackward0", (_relu,)),
    "reciprocal": D("ReciprocalBackward0", (_reciprocal,)),
    "clamp": D("ClampBackward1", (lambda n, g: F.where(n["mask"], g, _zero_scalar(g)),)),
    # linear algebra
    "mm": D("MmBackward0", (_mm_mat1, _mm_mat2), order=(1, 0)),
    "mv": D("MvBackward0", (
        lambda n, g: F.mul(F.reshape(g, (g.shape[0], 1)), n["vec"]),  # grad.ger(vec)
        lambda n, g: F.mv(F.t(n["self"]), g),
    )),
    "dot": D("DotBackward0", (lambda n, g: F.mul(g, n["tensor"]), lambda n, g: F.mul(g, n["self"]))),
    "bmm": D("BmmBackward0", (
        lambda n, g: F.bmm(g, F.transpose(n["mat2"], 1, 2)),
        lambda n, g: F.bmm(F.transpose(n["self"], 1, 2), g),
    ), order=(1, 0)),
    # reductions
    "sum": D("SumBackward0", (lambda n, g: F.expand(g, n["shape"]),)),
    "sum_dim": D("SumBackward1", (_sum_dim,)),
    "mean": D("MeanBackward0", (lambda n, g: F.div_scalar(F.expand(g, n["shape"]), n["count"]),)),
    "mean_dim": D("MeanBackward1", (_mean_dim,)),
    "max": D("MaxBackward1", (_max_all,)),
    "max_dim": D("MaxBackward0", (_select_dim,), multi_output=True),
    "min": D("MinBackward1", (_max_all,)),
    "min_dim": D("MinBackward0", (_select_dim,), multi_output=True),
    "amax": D("AmaxBackward0", (_amaxmin_grad,)),
    "amin": D("AminBackward0", (_amaxmin_grad,)),
    "var": D("VarBackward0", (_var,)),
    "std": D("StdBackward0", (_std,)),
    "softmax": D("SoftmaxBackward0", (_softmax,)),
    "log_softmax": D("LogSoftmaxBackward0", (_log_softmax,)),
    # torch's fused backward kernels, as nodes of a graph built by create_graph=True
    # (inputs: the incoming gradient, the saved forward value)
    "threshold_backward": D("ThresholdBackwardBackward0", (
        lambda n, g: F.threshold_backward(g, n["output"], n["threshold"]),
        _zeros,
    )),
    "tanh_backward": D("TanhBackwardBackward0", (
        lambda n, g: F.tanh_backward(g, n["output"]),
        lambda n, g: F.mul(F.mul(g, n["grad_output"]), F.mul(n["output"], -2.0)),
    )),
    "sigmoid_backward": D("SigmoidBackwardBackward0", (
        lambda n, g: F.sigmoid_backward(g, n["output"]),
        lambda n, g: F.mul(F.mul(g, n["grad_output"]), F.rsub(F.mul(n["output"], 2.0), 1.0)),
    )),
    "softmax_backward_data": D("SoftmaxBackwardDataBackward0", (
        lambda n, g: F.softmax_backward_data(g, n["output"], n["dim"]),
        _softmax_double_backward,
    )),
    "log_softmax_backward_data": D("LogSoftmaxBackwardDataBackward0", (
        lambda n, g: F.sub(g, F.sum(F.mul(g, F.exp(n["output"])), n["dim"], True)),
        lambda n, g: F.mul(F.mul(F.neg(F.sum(n["grad_output"], n["dim"], True)), F.exp(n["output"])), g),
    )),
    # shapes and views
    "view": D("ViewBackward0", (lambda n, g: F.reshape(g, n["shape"]),)),
    "unsafe_view": D("UnsafeViewBackward0", (lambda n, g: F.reshape(g, n["shape"]),)),
    "reshape_alias": D("ReshapeAliasBackward0", (lambda n, g: F.reshape(g, n["shape"]),)),
    "t": D("TBackward0", (lambda n, g: F.t(g),)),
    "transpose": D("TransposeBackward0", (lambda n, g: F.transpose(g, n["dim0"], n["dim1"]),)),
    "permute": D("PermuteBackward0", (lambda n, g: F.permute(g, n["inverse"]),)),
    "unsqueeze": D("UnsqueezeBackward0", (lambda n, g: F.squeeze(g, n["dim"]),)),
    "squeeze": D("SqueezeBackward0", (lambda n, g: F.unsqueeze_to(g, n["shape"]),)),
    "squeeze_dim": D("SqueezeBackward1", (lambda n, g: F.unsqueeze_to(g, n["shape"], n["dim"]),)),
    "squeeze_dims": D("SqueezeBackward2", (lambda n, g: F.unsqueeze_to(g, n["shape"], n["dims"]),)),
    "squeeze_dim_": D("SqueezeBackward4", (lambda n, g: F.unsqueeze_to(g, n["shape"], n["dim"]),)),
    "expand": D("ExpandBackward0", (lambda n, g: F.sum_to(g, n["shape"]),)),
    "select": D("SelectBackward0", (lambda n, g: F.index_backward(g, n["shape"], n["key"], "select"),)),
    "slice": D("SliceBackward0", (lambda n, g: F.index_backward(g, n["shape"], n["key"], "slice"),)),
    "index": D("IndexBackward0", (lambda n, g: F.index_backward(g, n["shape"], n["key"], "index"),)),
    "alias": D("AliasBackward0", (lambda n, g: g,)),
    # a view whose base was changed in place through it (or another view): its new history
    "as_strided": D("AsStridedBackward0", (
        lambda n, g: F.reshape(F.index_backward(g, (_numel(n["base_shape"]),), (n["index"],), "index"),
                               n["base_shape"]),
    )),
    # x[key] = value: basic indexing writes through a view (CopySlices wraps this node),
    # tensor indices use index_put_
    "copy": D("CopyBackwards", (_zeros, lambda n, g: g), reduce_broadcast=True),
    "index_put": D("IndexPutBackward0", (
        lambda n, g: F.masked_fill(g, n["mask"], 0.0),
        lambda n, g: F.getitem_raw(g, n["key"], "index"),
    ), reduce_broadcast=True),
    # the index nodes' backward kernels, as nodes of a graph built by create_graph=True
    "select_backward": D("SelectBackwardBackward0", (lambda n, g: F.getitem_raw(g, n["key"], "select"),)),
    "slice_backward": D("SliceBackwardBackward0", (lambda n, g: F.getitem_raw(g, n["key"], "slice"),)),
    "index_backward": D("IndexPutImplBackward0", (None, lambda n, g: F.getitem_raw(g, n["key"], "index"))),
    "cat": D("CatBackward0", (), all_inputs=lambda n, g: F.split_sizes(g, n["sizes"], n["dim"])),
    "stack": D("StackBackward0", (), all_inputs=lambda n, g: [
        F.select(g, n["dim"], i) for i in range(g.shape[n["dim"]])]),
    "split": D("SplitBackward0", (_split,), multi_output=True),
    "split_with_sizes": D("SplitWithSizesBackward0", (_split,), multi_output=True),
    "unbind": D("UnbindBackward0", (_unbind,), multi_output=True),
    # overwriting in place: the old value gets no gradient
    "zero": D("ZeroBackward0", (lambda n, g: F.zeros_for(g.shape, g.dtype, g.device),)),
    "fill": D("FillBackward2", (lambda n, g: F.zeros_for(g.shape, g.dtype, g.device),)),
    "fill_tensor": D("FillBackward3", (lambda n, g: F.zeros_for(g.shape, g.dtype, g.device), lambda n, g: F.sum(g))),
    # copies
    "clone": D("CloneBackward0", (lambda n, g: g,)),
    "to_copy": D("ToCopyBackward0", (lambda n, g: F.to_copy(g, n["dtype"], n["device"]),)),
}  # fmt: skip
