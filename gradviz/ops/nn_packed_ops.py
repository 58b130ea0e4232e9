"""Packed sequences' ops: ``_pack_padded_sequence`` and its PackPaddedSequenceBackward0 row (one
node from the padded input to the packed data, as torch records it), and ``_pad_packed_sequence``,
which torch builds of slices, views and copies into a filled tensor (its graph is theirs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops.construction import full, tensor
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    """How many sequences are still running at each time step (lengths sorted, decreasing)."""
    steps = np.arange(int(lengths[0]))
    return (lengths[None, :] > steps[:, None]).sum(axis=1).astype(np.int64)


def _pack_padded_sequence(input: Tensor, lengths: Tensor, batch_first: bool) -> tuple[Tensor, Tensor]:
    """(data, batch_sizes): the time steps of the (T, B, *) input, each cut to the sequences still
    running, one after the other."""
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    x = np.swapaxes(input._data, 0, 1) if batch_first else input._data
    lens = np.asarray(lengths._data, dtype=np.int64).reshape(-1)
    batch = x.shape[1]
    if lens.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.shape[0]} "
                           f"(batch_size={batch})")
    if lens[batch - 1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if np.any(lens[1:] > lens[:-1]):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
            "you do not need ONNX exportability."
        )
    sizes = _batch_sizes(lens)
    data = np.concatenate([x[t, :b] for t, b in enumerate(sizes)], axis=0)
    out = _out(np.ascontiguousarray(data), input)
    if _grad_state.enabled and _requires(input):
        record(_PACK, (input,), [out], {"input_sizes": tuple(input.shape), "batch_sizes": sizes,
                                        "batch_first": batch_first})
    return out, tensor(sizes)


def _pack_grad(n: Any, g: Tensor) -> Tensor:
    sizes, shape = n["batch_sizes"], n["input_sizes"]
    tb = (shape[1], shape[0]) + shape[2:] if n["batch_first"] else shape
    grad = np.zeros(tb, dtype=g._data.dtype)
    offset = 0
    for t, b in enumerate(sizes):
        grad[t, :b] = g._data[offset:offset + b]
        offset += b
    return _out(np.swapaxes(grad, 0, 1) if n["batch_first"] else grad, g)


_PACK = _register("_pack_padded_sequence", D("PackPaddedSequenceBackward0", (_pack_grad,)))


def _pad_packed_sequence(data: Tensor, batch_sizes: Tensor, batch_first: bool, padding_value: float,
                         total_length: int) -> tuple[Tensor, Tensor]:
    """(padded, lengths): the packed data back into a (T, B, *) tensor filled with padding_value,
    one copy per run of equal batch sizes, as torch's kernel does it."""
    sizes = [int(b) for b in np.asarray(batch_sizes._data).reshape(-1)]
    max_batch, steps = sizes[0], len(sizes)
    if total_length < steps:
        raise RuntimeError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                           f"got total_length={total_length} and max sequence length being {steps}")
    trailing = tuple(data.shape[1:])
    output = full((total_length, max_batch, *trailing), padding_value, dtype=data.dtype, device=data.device)
    lengths = np.empty(max_batch, dtype=np.int64)
    slot = max_batch - 1
    offset, prev_b, prev_i = 0, max_batch, 0
    for i in range(steps + 1):
        b = sizes[i] if i != steps else 0
        if b != prev_b:
            count = prev_b * (i - prev_i)
            # torch's order: the data's slice, then the output's slices, then the view copied in
            part = _shape.narrow(data, 0, offset, count)
            dest = _shape.narrow(_shape.narrow(output, 0, prev_i, i - prev_i), 1, 0, prev_b)
            dest.copy_(_views.view(part, i - prev_i, prev_b, *trailing))
            offset += count
            prev_i = i
        for _ in range(prev_b - b):
            lengths[slot] = i
            slot -= 1
        prev_b = b
    if batch_first:
        output = _views.transpose(output, 0, 1)
    return output, tensor(lengths)
