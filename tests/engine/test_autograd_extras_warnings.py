"""numpy's floating-point RuntimeWarnings from gradviz ops and backward formulas are silent, as
torch is for the same computations; numpy code of the user's own still warns.

Run as a user's script runs (a fresh interpreter): pytest resets warnings filters around
collection and each test, which is not what a script or ``gradviz run`` sees.
"""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
import numpy as np
import {mod} as T
x = T.tensor([0.0, 1.0, -1.0], requires_grad=True)
y = x.log() + (x / x) + x.sqrt() + (x * 1e308 * 1e308)
y.sum().backward()
z = T.tensor([0.0, 2.0], requires_grad=True)
(1 / z).sum().backward()
print("done", x.grad.tolist()[1])
{user}
"""


def _stderr(mod: str, user: str = "") -> tuple[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(mod=mod, user=user)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_gradviz_ops_are_silent_like_torch() -> None:
    out_t, err_t = _stderr("torch")
    out_g, err_g = _stderr("gradviz")
    assert "RuntimeWarning" not in err_t
    assert "RuntimeWarning" not in err_g, err_g
    assert out_t == out_g


def test_user_numpy_still_warns() -> None:
    _, err = _stderr("gradviz", "np.log(np.zeros(1))")
    assert "divide by zero encountered in log" in err


_TO_SCALAR = """
import warnings
import {mod} as T
warnings.simplefilter("always")
x = T.tensor(2.0, requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    int(x), x.item(), float(x.detach()), bool(x)
    float(x * 2)
    float(x)
print(len(caught), repr(str(caught[0].message).split(" (Triggered internally")[0]) if caught else "")
"""


def test_float_of_a_tensor_that_requires_grad_warns_once_as_torch() -> None:
    """torch 2.13 warns once per process in float(t) of a tensor that requires grad (not int,
    item or bool, nor a detached tensor); its message without torch's own source location."""
    out = []
    for mod in ("torch", "gradviz"):
        proc = subprocess.run([sys.executable, "-c", _TO_SCALAR.format(mod=mod)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        out.append(proc.stdout)
    assert out[1] == out[0] and out[0].startswith("1 'Converting a tensor with requires_grad=True")
