"""torch.utils.data's default_collate and default_convert, over gradviz tensors."""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any

import numpy as np

import gradviz
from gradviz.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_STR_OR_OBJECT = re.compile(r"[SaUO]")  # numpy dtype codes that do not make tensors
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _as_tensor(data: Any) -> Tensor:
    return gradviz.from_numpy(np.ascontiguousarray(data)) if isinstance(data, np.ndarray) else gradviz.tensor(
        np.asarray(data))


def default_convert(data: Any) -> Any:
    """Numpy arrays and scalars to tensors, recursively through mappings and sequences (no batching)."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and _STR_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return elem_type({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _collate_leaf(batch: list) -> Any:
    """The per-type collations of torch's default_collate_fn_map, or None when no type matches."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return gradviz.stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if _STR_OR_OBJECT.search(elem.dtype.str) is not None:
            raise TypeError(_ERR.format(elem.dtype))
        return default_collate([_as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return _as_tensor(np.array(batch))
    if isinstance(elem, float):
        return gradviz.tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):  # bools too, as torch.tensor([True, ...]) makes a bool tensor
        return gradviz.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    return None


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch: tensors along a new dim 0, numbers into tensors,
    mappings and sequences element by element (tuples come back as lists), strings as they come:
    a list of a mapping's values, a tuple of a sequence's (torch passes zip's tuples on)."""
    out = _collate_leaf(batch)
    if out is not None:
        return out
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({k: default_collate([d[k] for d in batch]) for k in elem})
                return clone
            return elem_type({k: default_collate([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))
