"""Printing tensors the way torch does: ``tensor([1.0000, 2.5000], requires_grad=True)``.

A port of torch/_tensor_str.py with its default print options (precision 4, threshold 1000,
edgeitems 3, linewidth 80), so ``str()`` matches torch's character for character.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gradviz import _dtype
from gradviz._sparse_coo import SparseCOO
from gradviz.device import CPU, to_device_array

if TYPE_CHECKING:
    from gradviz.tensor import Tensor

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE: bool | None = None  # None: chosen from the values; torch.set_printoptions(sci_mode=) forces it
# (torch.set_printoptions rebinds these five: gradviz/_printoptions.py)
_PREFIX = "tensor("


class _Formatter:
    """Chooses int mode / scientific mode and the common width from the values, as torch."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        # torch computes in the tensor's dtype; float32 values go through Python floats the same.
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        absv = np.abs(finite).astype(np.float64)
        lo, hi = float(absv.min()), float(absv.max())
        vals = finite.tolist()
        self.int_mode = all(v == math.ceil(v) for v in vals)
        # (an integer-valued tensor's smallest nonzero is at least 1: the 1e-4 test never fires)
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4 if SCI_MODE is None else SCI_MODE
        if self.sci_mode:
            self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}e}") for v in vals])
        elif self.int_mode:
            self.max_width = max([self.max_width] + [len(f"{v:.0f}") + 1 for v in vals])
        else:
            self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}f}") for v in vals])

    def width(self) -> int:
        return self.max_width

    def format(self, value: Any) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(data: np.ndarray) -> np.ndarray:
    """The edge items that a summarized print shows (torch's get_summarized_data)."""
    if data.ndim == 0:
        return data
    if data.ndim == 1:
        if data.shape[0] > 2 * EDGEITEMS:
            return np.concatenate((data[:EDGEITEMS], data[-EDGEITEMS:]))
        return data
    rows = list(range(data.shape[0]))
    if data.shape[0] > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + rows[-EDGEITEMS:]
    return np.stack([_summarized(data[i]) for i in rows])


def _vector_str(data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / element_length)))
    if summarize and data.shape[0] > 2 * EDGEITEMS:
        items = ([fmt.format(v) for v in data[:EDGEITEMS].tolist()] + [" ..."]
                 + [fmt.format(v) for v in data[-EDGEITEMS:].tolist()])
    else:
        items = [fmt.format(v) for v in data.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    # Rows are joined level by level; the nesting depth is the tensor's ndim, not the graph's.
    if data.ndim == 0:
        return fmt.format(data.item())
    if data.ndim == 1:
        return _vector_str(data, indent, summarize, fmt)
    n = data.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        slices = ([_tensor_str(data[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                  + [_tensor_str(data[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)])
    else:
        slices = [_tensor_str(data[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int, force_newline: bool = False) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False  # torch's sparse tensors: only the first suffix is forced down
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _part_str(data: np.ndarray, floating: bool, indent: int) -> str:
    """A sparse tensor's indices or values as torch's _tensor_str prints them, with the size
    of an empty one."""
    if data.size == 0:
        return f"[], size={tuple(data.shape)}"
    summarize = data.size > THRESHOLD
    return _tensor_str(data, indent, summarize, _Formatter(_summarized(data) if summarize else data, floating))


def _format_sparse(t: Tensor) -> str:
    coo = t._data
    indent = len(_PREFIX)
    suffixes = [f"device='{t.device}'"] if t.device.type != "cpu" else []
    suffixes += [f"size={tuple(coo.shape)}", f"nnz={coo.nnz}"]
    if t.dtype not in (_dtype._default[0], _dtype.int64, _dtype.bool_):
        suffixes.append(f"dtype={t.dtype!r}")
    suffixes.append(f"layout={t.layout!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name().rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    ip, vp = "indices=tensor(", "values=tensor("
    body = (ip + _part_str(coo.indices, False, indent + len(ip)) + "),\n" + " " * indent + vp
            + _part_str(coo.values, t.dtype.is_floating_point, indent + len(vp)) + ")")
    return _add_suffixes(_PREFIX + body, suffixes, indent, force_newline=True)


def format_tensor(t: Tensor) -> str:
    if type(t._data) is SparseCOO:
        return _format_sparse(t)
    data = to_device_array(t._data, CPU)
    indent = len(_PREFIX)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if data.size == 0:
        # The shape is shown unless it is (0,), and the dtype unless it is the default float.
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if t.dtype is not _dtype._default[0]:
            suffixes.append(f"dtype={t.dtype!r}")
        body = "[]"
    else:
        if t.dtype not in (_dtype._default[0], _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype={t.dtype!r}")
        summarize = data.size > THRESHOLD
        fmt = _Formatter(_summarized(data) if summarize else data, t.dtype.is_floating_point)
        body = _tensor_str(data, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name().rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    if t._fw_grad is not None:  # a dual tensor (forward AD), as torch prints it
        suffixes.append(f"tangent={format_tensor(t._fw_grad)}")
    return _add_suffixes(_PREFIX + body, suffixes, indent)
