"""torch's process-wide state functions, sym_* helpers and exception classes (coverage2, issue 34):
each call runs on torch 2.13 and on gradviz, and the results, warnings and errors must agree."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz


def _outcome(T: Any, fn: Callable[[Any], Any]) -> tuple:
    """(result or (error class name, message), warning messages up to torch's C++ suffix)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: Any = ("ok", fn(T))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            out = (type(e).__name__, str(e).replace("gradviz.tensor.Tensor", "torch.Tensor"))
    # torch warns about set_default_tensor_type once per process, whichever test came first
    caught = [w for w in caught if "set_default_tensor_type() is deprecated" not in str(w.message)]
    msgs = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return _plain(out), msgs, [w.category.__name__ for w in caught]


def _plain(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    if isinstance(x, (torch.dtype, gradviz.dtype)):
        return str(x)
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return ("tensor", str(x.dtype), x.tolist())
    return (type(x).__name__, x)


@pytest.fixture(autouse=True)
def _restore() -> Any:
    yield
    for T in (torch, gradviz):
        T.set_autocast_dtype("cpu", T.bfloat16)
        T.set_autocast_dtype("cuda", T.float16)
        T.set_autocast_dtype("xla", T.bfloat16)
        T.set_autocast_cache_enabled(True)
        T.set_anomaly_enabled(False)
        T.set_default_dtype(T.float32)
        while T.autocast_increment_nesting() > 1:
            T.autocast_decrement_nesting()
            T.autocast_decrement_nesting()
        T.autocast_decrement_nesting()


CASES: dict[str, Callable[[Any], Any]] = {
    "cpu_dtype": lambda T: T.get_autocast_cpu_dtype(),
    "gpu_dtype": lambda T: T.get_autocast_gpu_dtype(),
    "ipu_dtype": lambda T: T.get_autocast_ipu_dtype(),
    "xla_dtype": lambda T: T.get_autocast_xla_dtype(),
    "set_cpu_dtype": lambda T: (T.set_autocast_cpu_dtype(T.float16), T.get_autocast_dtype("cpu"),
                                T.get_autocast_cpu_dtype()),
    "set_dtype": lambda T: (T.set_autocast_dtype("cuda", T.bfloat16), T.get_autocast_gpu_dtype()),
    "set_gpu_dtype": lambda T: (T.set_autocast_gpu_dtype(T.bfloat16), T.get_autocast_dtype("cuda")),
    "set_dtype_bad_device": lambda T: T.set_autocast_dtype("foo", T.float16),
    "enabled_flags": lambda T: (T.is_autocast_cpu_enabled(), T.is_autocast_ipu_enabled(),
                                T.is_autocast_xla_enabled(), T.is_autocast_enabled("cpu")),
    "disable_cpu": lambda T: (T.set_autocast_enabled("cpu", False), T.is_autocast_enabled("cpu")),
    "disable_cpu_old": lambda T: (T.set_autocast_cpu_enabled(False), T.is_autocast_cpu_enabled()),
    "enabled_not_bool": lambda T: T.set_autocast_enabled("cpu", "yes"),
    "enabled_bad_device": lambda T: T.is_autocast_enabled("bogus"),
    "nesting": lambda T: (T.autocast_increment_nesting(), T.autocast_increment_nesting(),
                          T.autocast_decrement_nesting(), T.autocast_decrement_nesting()),
    "cache": lambda T: (T.is_autocast_cache_enabled(), T.set_autocast_cache_enabled(False),
                        T.is_autocast_cache_enabled(), T.clear_autocast_cache()),
    "autocast_ctx_dtype": lambda T: (T.set_autocast_dtype("cpu", T.float16),
                                     T.autocast("cpu", enabled=False).fast_dtype),
    "anomaly": lambda T: (T.is_anomaly_check_nan_enabled(), T.set_anomaly_enabled(True, False),
                          T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled(), T.set_anomaly_enabled(False),
                          T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()),
    "is_distributed": lambda T: T.is_distributed(T.ones(2)),
    "is_distributed_int": lambda T: T.is_distributed(3),
    "default_tensor_type": lambda T: (T.set_default_tensor_type(T.DoubleTensor), T.get_default_dtype(),
                                      T.ones(1).dtype, T.set_default_tensor_type("torch.FloatTensor"),
                                      T.get_default_dtype()),
    "default_tensor_type_half": lambda T: (T.set_default_tensor_type("torch.HalfTensor"), T.get_default_dtype()),
    "default_tensor_type_long": lambda T: T.set_default_tensor_type("torch.LongTensor"),
    "default_tensor_type_dtype": lambda T: T.set_default_tensor_type(T.float64),
    "default_tensor_type_cuda": lambda T: T.set_default_tensor_type("torch.cuda.FloatTensor"),
    "default_tensor_type_module": lambda T: T.set_default_tensor_type("foo"),
    "default_tensor_type_name": lambda T: T.set_default_tensor_type("torch.Foo"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_functions_match_torch(name: str) -> None:
    assert _outcome(gradviz, CASES[name]) == _outcome(torch, CASES[name])


def test_set_default_tensor_type_warns_once() -> None:
    gradviz._process_switches._warned.clear()
    with pytest.warns(UserWarning, match=r"^torch.set_default_tensor_type\(\) is deprecated as of PyTorch 2.1"):
        gradviz.set_default_tensor_type(gradviz.FloatTensor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradviz.set_default_tensor_type(gradviz.FloatTensor)


def test_enabling_cpu_autocast_says_gradviz_has_none() -> None:
    with pytest.raises(NotImplementedError, match="gradviz has no autocast"):
        gradviz.set_autocast_enabled("cpu", True)
    assert gradviz.is_autocast_enabled("cpu") is False


SYM: list[tuple[str, Callable[[Any], tuple]]] = [
    ("sym_int", lambda T: (3.7,)), ("sym_int", lambda T: (-3.7,)), ("sym_int", lambda T: (5,)),
    ("sym_int", lambda T: ("3",)), ("sym_int", lambda T: (math.inf,)), ("sym_int", lambda T: (T.tensor(3.5),)),
    ("sym_float", lambda T: (3,)), ("sym_float", lambda T: ("x",)), ("sym_float", lambda T: (T.tensor(3),)),
    ("sym_max", lambda T: (2, 3.0)), ("sym_max", lambda T: (2, 3)), ("sym_max", lambda T: (2.0, 3)),
    ("sym_max", lambda T: (T.tensor(3), T.tensor(5))), ("sym_min", lambda T: (2.0, 3)),
    ("sym_min", lambda T: (True, 3)), ("sym_min", lambda T: ("a", 3)),
    ("sym_not", lambda T: (True,)), ("sym_not", lambda T: (T.tensor(True),)), ("sym_not", lambda T: (0,)),
    ("sym_ite", lambda T: (True, 1, 2)), ("sym_ite", lambda T: (False, 1, 2)), ("sym_ite", lambda T: (True, 1, 2.0)),
    ("sym_ite", lambda T: (T.tensor(True), 1, 2)),
    ("sym_sqrt", lambda T: (4,)), ("sym_sqrt", lambda T: (T.tensor(4.0),)), ("sym_sqrt", lambda T: (-1.0,)),
    ("sym_sum", lambda T: ([1, 2, 3],)), ("sym_sum", lambda T: ([1.0, 2],)), ("sym_sum", lambda T: ([],)),
    ("sym_sum", lambda T: (1, 2, 3)), ("sym_sum", lambda T: ([T.tensor(1.0), T.tensor(2.0)],)),
    ("sym_fresh_size", lambda T: (5,)), ("sym_constrain_range", lambda T: (5,)),
    ("sym_constrain_range_for_size", lambda T: (5,)),
]


@pytest.mark.parametrize(("name", "args"), SYM, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SYM)])
def test_sym_helpers_match_torch(name: str, args: Callable[[Any], tuple]) -> None:
    def call(T: Any) -> Any:
        return getattr(T, name)(*args(T))

    assert _outcome(gradviz, call) == _outcome(torch, call)


EXC = ["OutOfMemoryError", "AcceleratorError", "FatalError", "JITException", "DisableTorchFunction",
       "DisableTorchFunctionSubclass"]


@pytest.mark.parametrize("name", EXC)
def test_exception_classes_have_torchs_bases(name: str) -> None:
    ours, theirs = getattr(gradviz, name), getattr(torch, name)
    assert [c.__name__ for c in ours.__mro__] == [c.__name__ for c in theirs.__mro__]
    if issubclass(theirs, BaseException):
        with pytest.raises(ours, match="boom"):
            raise ours("boom")
    else:
        with ours():
            assert gradviz.ones(1).tolist() == [1.0]
