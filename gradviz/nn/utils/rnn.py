"""torch.nn.utils.rnn: padded batches of sequences, and PackedSequence, the time-major packing
that RNN, LSTM and GRU run on without computing the padding."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.ops import functions as F
from gradviz.ops.construction import tensor
from gradviz.ops.nn_packed_ops import _pack_padded_sequence, _pad_packed_sequence
from gradviz.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices): the sequences' time steps one after
    the other, step t holding the batch_sizes[t] sequences still running, longest first;
    sorted_indices says which input sequence each column is."""

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should never be created "
                    "manually. They should be instantiated by functions like pack_sequence and pack_padded_sequences "
                    "in nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence"
                )
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError(f"Expected a list or tuple of (data, batch_sizes), got {type(data).__name__}")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> PackedSequence:
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The data moved or cast; the indices follow it to its device (batch_sizes stay on CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        device = data.device
        sorted_indices = None if self.sorted_indices is None else self.sorted_indices.to(device)
        unsorted_indices = None if self.unsorted_indices is None else self.unsorted_indices.to(device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to(*args, device="cuda", **kwargs)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to(*args, device="cpu", **kwargs)

    def double(self) -> PackedSequence:
        return self.to(dtype=_dtype.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=_dtype.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=_dtype.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=_dtype.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=_dtype.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=_dtype.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=_dtype.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=_dtype.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None for None)."""
    if permutation is None:
        return None
    output = F.empty_like(permutation)
    output.scatter_(0, permutation, F.arange(0, permutation.numel(), device=permutation.device))
    return output


def _lengths_tensor(lengths: Any) -> Tensor:
    if isinstance(lengths, Tensor):
        return lengths.to(dtype=_dtype.int64)
    return tensor(np.asarray([int(v) for v in lengths], dtype=np.int64))


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch (B, T, * with batch_first) of sequences of ``lengths``;
    unless enforce_sorted, the sequences are first sorted by length (an index_select)."""
    lengths = _lengths_tensor(lengths)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = F.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = F.index_select(input, 0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded_sequence(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """(padded, lengths): the inverse of pack_padded_sequence, padded to ``total_length`` steps
    when given, the sequences in their order before packing."""
    max_seq_length = sequence.batch_sizes.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {max_seq_length}"
            )
        max_seq_length = total_length
    padded, lengths = _pad_packed_sequence(sequence.data, sequence.batch_sizes, batch_first, padding_value,
                                           max_seq_length)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        return F.index_select(padded, 0 if batch_first else 1, unsorted), lengths[unsorted.cpu()]
    return padded, lengths


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Sequences of different lengths stacked into one (T, B, *) tensor ((B, T, *) with
    batch_first) filled with padding_value: each sequence copied into its slot, as torch's
    kernel does it (a CopySlices per sequence)."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    seqs = tuple(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    max_len = max(s.shape[0] for s in seqs)
    trailing = tuple(seqs[0].shape[1:])
    dims = (len(seqs), max_len) if batch_first else (max_len, len(seqs))
    out = F.full((*dims, *trailing), padding_value, dtype=seqs[0].dtype, device=seqs[0].device)
    for i, s in enumerate(seqs):
        n = s.shape[0]
        start = max_len - n if padding_side == "left" else 0
        if batch_first:
            dest = F.narrow(F.select(out, 0, i), 0, start, n)
        else:
            dest = F.select(F.narrow(out, 0, start, n), 1, i)
        dest.copy_(s)
    return out


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The padded batch back into a list of sequences of ``lengths`` (transposing a time-major
    batch in place, as torch does)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    idx = F.arange(padded_sequences.shape[1], device=lengths.device)
    return [seq[F.lt(idx, length)] for seq, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """pad_sequence then pack_padded_sequence."""
    lengths = tensor(np.asarray([v.shape[0] for v in sequences], dtype=np.int64))
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The packed sequences as a list, in their order before packing."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)



# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
