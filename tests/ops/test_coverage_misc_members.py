"""Tensor.set_/is_set_to/volatile, torch.frombuffer, torch.Stream/Event on the CPU and
torch.detach(_) against torch 2.13 (values, sharing, errors, reprs) (coverage2, issue 34)."""

from __future__ import annotations

import array
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz


def _plain(x: Any) -> Any:
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return ("tensor", str(x.dtype), tuple(x.shape), x.stride(), x.tolist(), x._version, x.requires_grad)
    if isinstance(x, (tuple, list)):
        return tuple(_plain(v) for v in x)
    if isinstance(x, (torch.device, gradviz.device)):
        return str(x)
    if isinstance(x, (torch.Stream, torch.Event, gradviz.Stream, gradviz.Event)):
        return repr(x)
    return x


def _outcome(T: Any, fn: Callable[[Any], Any]) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = _plain(fn(T))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            out = (type(e).__name__, str(e).split(" (Triggered internally")[0])
    # torch says frombuffer's read-only warning once per process, whichever test came first
    return out, [str(w.message) for w in caught if "buffer is not writable" not in str(w.message)]


def _set_whole(T: Any) -> tuple:
    y, z = T.zeros(2), T.arange(6.0)
    y.set_(z)
    z[0] = 7.0  # the memory is shared
    return y, y.is_set_to(z), z.is_set_to(y), y.data_ptr() == z.data_ptr()


def _set_geometry(T: Any) -> tuple:
    y, z = T.zeros(2), T.arange(6.0)
    y.set_(z, 1, (2, 2), (2, 1))
    y[0, 0] = -1.0
    return y, z, y.is_set_to(z)


def _frombuffer_shared(T: Any) -> tuple:
    a = array.array("f", [1, 2, 3, 4])
    t = T.frombuffer(a, dtype=T.float32)
    a[0] = 9
    t[1] = -2
    return t, list(a)


CASES: dict[str, Callable[[Any], Any]] = {
    "set_whole": _set_whole,
    "set_geometry": _set_geometry,
    "set_geometry_default_stride": lambda T: T.zeros(1).set_(T.arange(8.0), 2, (2, 3)),
    "set_nothing": lambda T: (lambda t: (tuple(t.shape), t.tolist(), t._version))(T.ones(3).set_()),
    "set_leaf_requires_grad": lambda T: T.ones(2, requires_grad=True).set_(T.arange(6.0)),
    "set_dtype": lambda T: T.ones(2, dtype=T.int64).set_(T.arange(6.0)),
    "is_set_to_other": lambda T: T.arange(6.0).is_set_to(T.arange(6.0)),
    "is_set_to_view": lambda T: (lambda z: (z.is_set_to(z), z[1:].is_set_to(z), z.view(2, 3).is_set_to(z)))(
        T.arange(6.0)),
    "volatile": lambda T: T.ones(2).volatile,
    "frombuffer_shared": _frombuffer_shared,
    "frombuffer_bytes": lambda T: T.frombuffer(b"\x01\x02\x03\x04", dtype=T.uint8, count=2, offset=1),
    "frombuffer_int32": lambda T: T.frombuffer(bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00"), dtype=T.int32),
    "frombuffer_grad": lambda T: T.frombuffer(bytearray(8), dtype=T.float32, requires_grad=True),
    "frombuffer_ragged": lambda T: T.frombuffer(bytearray(5), dtype=T.float32),
    "frombuffer_empty": lambda T: T.frombuffer(bytearray(0), dtype=T.float32),
    "frombuffer_count": lambda T: T.frombuffer(bytearray(8), dtype=T.float32, count=3),
    "frombuffer_offset": lambda T: T.frombuffer(bytearray(8), dtype=T.float32, offset=8),
    "stream": lambda T: (T.Stream(), T.Stream().device, T.Stream() == T.Stream(), T.Stream().query(),
                         T.Stream().synchronize(), T.Stream().wait_event(T.Event()), T.Stream().stream_id),
    "stream_with": lambda T: T.Stream().__enter__(),
    "stream_record_event": lambda T: T.Stream().record_event(),
    "stream_wait_stream": lambda T: T.Stream().wait_stream(T.Stream()),
    "stream_cuda": lambda T: T.Stream("cuda"),
    "event": lambda T: (T.Event(), T.Event().device, T.Event().query(), T.Event().synchronize(), T.Event().wait()),
    "event_record": lambda T: T.Event().record(),
    "event_elapsed": lambda T: T.Event(enable_timing=True).elapsed_time(T.Event(enable_timing=True)),
    "event_cuda": lambda T: T.Event("cuda"),
    "is_vulkan_available": lambda T: T.is_vulkan_available(),
    "cudnn_is_acceptable": lambda T: T.cudnn_is_acceptable(T.ones(2)),
    "cudnn_is_acceptable_int": lambda T: T.cudnn_is_acceptable(1),
    "is_distributed_method": lambda T: T.ones(2).is_distributed(),
    "new_empty_strided": lambda T: (lambda t: (str(t.dtype), tuple(t.shape), t.stride(), t.requires_grad))(
        T.ones(2, dtype=T.float64).new_empty_strided((2, 3), (1, 2), requires_grad=True)),
    "resize_as_top_level": lambda T: T.resize_as_(T.arange(6.0), T.ones(2, 2)),
    "detach": lambda T: T.detach(T.ones(2, requires_grad=True) * 2),
    "detach_": lambda T: T.detach_(T.ones(2, requires_grad=True) * 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_member_matches_torch(name: str) -> None:
    assert _outcome(gradviz, CASES[name]) == _outcome(torch, CASES[name])
