"""Storages against torch 2.13: Tensor.untyped_storage()/storage()/storage_type(), UntypedStorage,
TypedStorage and the legacy FloatStorage... classes (sizes, bytes, values, data_ptr coherence with
the tensor, sharing, reprs, isinstance) (coverage2, issue 34)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz


def _outcome(T: Any, fn: Callable[[Any], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's TypedStorage warning is once per process
        try:
            return fn(T)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return type(e).__name__, str(e)


def _x(T: Any) -> Any:
    return T.arange(6.0).reshape(2, 3)


def _shared(T: Any) -> tuple:
    x = _x(T)
    st = x.untyped_storage()
    st[0] = 7  # a byte of the first float
    s = x.storage()
    s[5] = -1.0
    return x.tolist(), st.tolist()[:4]


def _set_from_storage(T: Any) -> tuple:
    x = _x(T)
    y = T.tensor([], dtype=T.float32).set_(x.untyped_storage())
    y[0] = 42.0
    return y.tolist(), x.tolist(), y.data_ptr() == x.data_ptr()


CASES: dict[str, Callable[[Any], Any]] = {
    "untyped_repr": lambda T: repr(_x(T).untyped_storage()),
    "untyped_sizes": lambda T: (_x(T).untyped_storage().nbytes(), _x(T).untyped_storage().size(),
                                len(_x(T).untyped_storage()), _x(T).untyped_storage().element_size()),
    "untyped_ptr": lambda T: (lambda x: (x.untyped_storage().data_ptr() == x.data_ptr(),
                                         x[1].untyped_storage().data_ptr() == x.data_ptr(),
                                         x[1].untyped_storage().nbytes()))(_x(T)),
    "untyped_items": lambda T: (_x(T).untyped_storage()[7], _x(T).untyped_storage()[:8].tolist(),
                                _x(T).untyped_storage().device.type, _x(T).untyped_storage().is_shared()),
    "untyped_new": lambda T: (repr(T.UntypedStorage(4).fill_(3)), T.UntypedStorage([1, 2, 255]).tolist()),
    "untyped_int": lambda T: T.tensor([1, 2], dtype=T.uint8).untyped_storage().tolist(),
    "untyped_eq": lambda T: (lambda x: x.untyped_storage() == x.untyped_storage())(_x(T)),
    "typed_repr": lambda T: repr(_x(T).storage()),
    "typed": lambda T: (lambda s: (s.size(), str(s.dtype), s[1], s.tolist(), s.element_size(), s.nbytes(),
                                   s.untyped().nbytes(), len(s)))(_x(T).storage()),
    "typed_ptr": lambda T: (lambda x: x.storage().data_ptr() == x.data_ptr())(_x(T)),
    "typed_int64": lambda T: (lambda s: (s.size(), s.tolist(), str(s.dtype)))(T.tensor([3, -4]).storage()),
    "storage_type": lambda T: [T.ones(1, dtype=d).storage_type().__name__
                               for d in (T.float32, T.float64, T.int64, T.int32, T.bool, T.uint8, T.int8, T.int16,
                                         T.float16)],
    "legacy_classes": lambda T: (repr(T.FloatStorage([1, 2])), T.LongStorage([1, 2]).tolist(),
                                 T.DoubleStorage(3).size(), T.BoolStorage([True, False]).tolist(),
                                 str(T.FloatStorage.dtype), T.ByteStorage([1, 300 % 256]).tolist()),
    "typed_storage_ctor": lambda T: repr(T.TypedStorage([1, 2], dtype=T.float64)),
    "isinstance": lambda T: (isinstance(_x(T).storage(), T.FloatStorage), isinstance(_x(T).storage(), T.TypedStorage),
                             isinstance(_x(T).storage(), T.LongStorage), type(_x(T).storage()).__name__),
    "shared": _shared,
    "set_from_storage": _set_from_storage,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_storage_matches_torch(name: str) -> None:
    assert _outcome(gradviz, CASES[name]) == _outcome(torch, CASES[name])


def test_storage_warns_once_as_torch() -> None:
    gradviz._storage._warned.clear()
    with pytest.warns(UserWarning, match=r"^TypedStorage is deprecated\. It will be removed in the future"):
        gradviz.ones(2).storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradviz.ones(2).storage()
