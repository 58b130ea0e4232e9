"""torch.nn.utils.rnn.pad_sequence."""

from __future__ import annotations

from collections.abc import Sequence

from gradviz.ops import functions as F
from gradviz.tensor import Tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Sequences of different lengths stacked into one tensor, padded with padding_value. Built
    of differentiable ops (a full tensor, and each sequence copied into its slot)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in seqs)
    trailing = tuple(seqs[0].shape[1:])
    padded = []
    for s in seqs:
        extra = max_len - s.shape[0]
        if extra:
            fill = F.zeros_for((extra, *trailing), s.dtype, s.device)
            if padding_value:
                fill = F.add_scalar(fill, padding_value)
            s = F.cat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    out = F.stack(padded, 0)
    return out if batch_first else F.transpose(out, 0, 1)


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
