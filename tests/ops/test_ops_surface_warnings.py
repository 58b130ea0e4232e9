"""numpy's RuntimeWarnings stay out of gradviz ops (issue 14): torch computes the same infs and NaNs
silently, and so does gradviz (a warnings filter on gradviz's modules; numpy.errstate in the
reductions numpy implements in Python). Each module runs the same edge-value program in a fresh
interpreter with the default warning filters, as a user's script runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch  # noqa: F401 - the oracle must be installed: a missing torch fails this file

PROBE = r'''
import sys
import numpy as np
T = __import__(sys.argv[1])
inf, nan = float("inf"), float("nan")
x = T.tensor([0.0, -1.0, inf, -inf, nan, 1e30, 2.0])
i = T.tensor([0, 1, -3])
ops = {
 "log": lambda: x.log(), "log10": lambda: x.log10(), "log2": lambda: x.log2(), "log1p": lambda: (x - 1).log1p(),
 "sqrt": lambda: x.sqrt(),
 "rsqrt": lambda: x.rsqrt(),
 "div0": lambda: x / 0,
 "rdiv": lambda: 1 / x,
 "reciprocal": lambda: x.reciprocal(),
 "exp": lambda: (x * 1e10).exp(),
 "expm1": lambda: (x * 1e10).expm1(),
 "pow": lambda: x ** 1e5,
 "pow_neg": lambda: x ** -2,
 "powt": lambda: x ** x,
 "mul": lambda: x * x * x, "sub": lambda: x - x, "add": lambda: x + x, "mul0": lambda: x * 0,
 "sigmoid": lambda: x.sigmoid(),
 "tanh": lambda: x.tanh(),
 "softmax": lambda: x.softmax(0),
 "log_softmax": lambda: x.log_softmax(0),
 "mean": lambda: x.mean(),
 "var": lambda: x.var(),
 "std": lambda: x.std(),
 "sum": lambda: (x * 1e300).sum(),
 "prod": lambda: x.prod(),
 "cumsum": lambda: (x * 1e300).cumsum(0),
 "cumprod": lambda: x.cumprod(0),
 "norm": lambda: x.norm(),
 "logsumexp": lambda: x.logsumexp(0),
 "clamp": lambda: x.clamp(0, 1), "fmod": lambda: x.fmod(0), "rem": lambda: x % 0, "floordiv": lambda: x // 0,
 "isclose": lambda: x.isclose(x), "where": lambda: T.where(x > 0, x / 0, x), "var_mean": lambda: T.var_mean(x),
 "remt": lambda: x % x,
 "max": lambda: x.max(),
 "amax": lambda: x.amax(),
 "sort": lambda: x.sort(),
 "topk": lambda: x.topk(2),
 "sin": lambda: x.sin(),
 "cos": lambda: x.cos(),
 "abs": lambda: x.abs(),
 "sign": lambda: x.sign(),
 "round": lambda: x.round(),
 "int_cast": lambda: x.long(), "int32_cast": lambda: x.to(T.int32), "half": lambda: (x * 1e10).half(),
 "mm": lambda: x[None] @ x[:, None], "matmul_big": lambda: (x * 1e300)[None] @ (x * 1e300)[:, None],
 "linspace": lambda: T.linspace(0, inf, 3), "arange": lambda: T.arange(0, 1, 0.5),
 "grad_log": lambda: (lambda y: (y.log().sum().backward(), y.grad)[1])(T.tensor([0.0, 1.0], requires_grad=True)),
 "grad_sqrt": lambda: (lambda y: (y.sqrt().sum().backward(), y.grad)[1])(T.tensor([0.0, -1.0], requires_grad=True)),
 "grad_div": lambda: (lambda y: ((1 / y).sum().backward(), y.grad)[1])(T.tensor([0.0, 1.0], requires_grad=True)),
 "grad_pow": lambda: (lambda y: ((y ** 0.5).sum().backward(), y.grad)[1])(T.tensor([0.0, 1.0], requires_grad=True)),
 "grad_norm": lambda: (lambda y: (y.norm().backward(), y.grad)[1])(T.tensor([0.0, 0.0], requires_grad=True)),
 "grad_std": lambda: (lambda y: (y.std().backward(), y.grad)[1])(T.tensor([1.0, 1.0], requires_grad=True)),
 "grad_prod": lambda: (lambda y: (y.prod().backward(), y.grad)[1])(T.tensor([0.0, 2.0], requires_grad=True)),
 "grad_logsumexp": lambda: (lambda y: (y.logsumexp(0).backward(), y.grad)[1])(
     T.tensor([-inf, -inf], requires_grad=True)),
}
only = sys.argv[2:] or list(ops)
for k in only:
    try:
        ops[k]()
    except Exception as e:
        print(k, "raised", type(e).__name__, e, file=sys.stderr)
'''


def _stderr(module: str, *extra: str) -> str:
    res = subprocess.run([sys.executable, "-c", PROBE, module, *extra], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stderr


@pytest.mark.parametrize("module", ["torch", "gradviz"])
def test_edge_values_print_no_runtime_warning(module):
    err = _stderr(module)
    assert "Warning" not in err and "raised" not in err, err


def test_numpy_warnings_of_user_code_are_left_alone():
    code = "import gradviz, numpy as np\nnp.log(np.zeros(1))\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "RuntimeWarning: divide by zero encountered in log" in res.stderr


def test_a_filter_the_user_adds_still_wins():
    code = ("import warnings, gradviz\nwarnings.simplefilter('error', RuntimeWarning)\n"
            "try:\n    gradviz.tensor([0.0]).log()\nexcept RuntimeWarning as e:\n    print('raised', e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "raised divide by zero encountered in log" in res.stdout, res.stdout + res.stderr
