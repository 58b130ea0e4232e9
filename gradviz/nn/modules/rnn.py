"""RNN, LSTM and GRU, and their cells, as torch's CPU path computes them.

The native path (RNN and GRU always, LSTM in float64) is torch's: the input projection of the
whole sequence at once (linear, then unbind over time), then per step a cell of linear, add,
unsafe_chunk and activations; the outputs stacked, directions concatenated. A float32 LSTM is
one oneDNN layer node per layer and direction (MkldnnRnnLayerBackward0), as in torch."""

from __future__ import annotations

import math
from typing import Any

from gradviz import _dtype
from gradviz.nn import functional as F
from gradviz.nn import init
from gradviz.nn.modules.module import Module
from gradviz.nn.parameter import Parameter
from gradviz.nn.utils.rnn import PackedSequence
from gradviz.ops import functions as O
from gradviz.ops.construction import empty, zeros
from gradviz.ops.nn_ops import linear
from gradviz.ops.nn_rnn_ops import mkldnn_lstm_layer, transposed_in_place
from gradviz.ops.split_variants import unsafe_chunk
from gradviz.tensor import Tensor

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]


def _size_list(shape: Any) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _tuple_size(shape: Any) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# -- cells (torch's SimpleCell, LSTMCell and GRUCell on CPU) --------------------------------------


def _rnn_cell(x: Tensor, h: Tensor, p: tuple, act: str, pre: bool) -> Tensor:
    w_ih, w_hh, b_ih, b_hh = p
    hh = linear(h, w_hh, b_hh)
    pre_act = O.add(hh, x if pre else linear(x, w_ih, b_ih))
    return O.tanh(pre_act) if act == "tanh" else O.relu(pre_act)


def _lstm_cell(x: Tensor, h: Tensor, c: Tensor, p: tuple, pre: bool) -> tuple[Tensor, Tensor]:
    w_ih, w_hh, b_ih, b_hh = p
    hh = linear(h, w_hh, b_hh)
    gates = O.add(hh, x if pre else linear(x, w_ih, b_ih))
    ci, cf, cg, co = unsafe_chunk(gates, 4, 1)
    i, f, g, o = O.sigmoid(ci), O.sigmoid(cf), O.tanh(cg), O.sigmoid(co)
    cy = O.add(O.mul(f, c), O.mul(i, g))
    hy = O.mul(o, O.tanh(cy))
    return hy, cy


def _gru_cell(x: Tensor, h: Tensor, p: tuple, pre: bool) -> Tensor:
    w_ih, w_hh, b_ih, b_hh = p
    ig = unsafe_chunk(x if pre else linear(x, w_ih, b_ih), 3, 1)
    hg = unsafe_chunk(linear(h, w_hh, b_hh), 3, 1)
    reset = O.sigmoid(hg[0].add_(ig[0]))
    update = O.sigmoid(hg[1].add_(ig[1]))
    new = O.tanh(O.add(ig[2], hg[2].mul_(reset)))
    return O.sub(h, new).mul_(update).add_(new)


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if proj_size:
            raise NotImplementedError("gradviz: LSTM with proj_size is not implemented")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for d in range(dirs):
                layer_in = input_size if layer == 0 else hidden_size * dirs
                suffix = "_reverse" if d == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate, layer_in), (gate, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate,), (gate,)]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(empty(*shape, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def flatten_parameters(self) -> None:
        """A no-op, as torch's is off cuDNN: the weights have no flat buffer to compact."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _params(self, layer: int, d: int) -> tuple:
        names = self._all_weights[layer * (2 if self.bidirectional else 1) + d]
        ps = [getattr(self, n) for n in names]
        return (ps[0], ps[1], ps[2], ps[3]) if self.bias else (ps[0], ps[1], None, None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _check_input(self, input: Tensor) -> bool:
        if input.dim() not in (2, 3):
            raise ValueError(f"{self.mode}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )
        return input.dim() == 3

    def _check_hidden(self, hx: Tensor, expected: tuple, msg: str) -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(_tuple_size(expected), _size_list(hx.shape)))

    def _expected_hidden(self, input: Tensor) -> tuple:
        mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, self.hidden_size)

    def _run(self, input: Tensor, hx: Any) -> tuple[Tensor, Any]:
        if isinstance(input, PackedSequence):
            return self._run_packed(input, hx)
        batched = self._check_input(input)
        lstm = self.mode == "LSTM"
        if not batched:
            input = O.unsqueeze(input, 1)
            if hx is not None:
                if lstm:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError(
                            f"For unbatched 2-D input, hx and cx should also be 2-D but got ({hx[0].dim()}-D, "
                            f"{hx[1].dim()}-D) tensors"
                        )
                    hx = (O.unsqueeze(hx[0], 1), O.unsqueeze(hx[1], 1))
                else:
                    if hx.dim() != 2:
                        raise RuntimeError(
                            f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor"
                        )
                    hx = O.unsqueeze(hx, 1)
        expected = self._expected_hidden(input)
        if hx is None:
            h0 = zeros(*expected, dtype=input.dtype, device=input.device)
            hx = (h0, zeros(*expected, dtype=input.dtype, device=input.device)) if lstm else h0
        elif lstm:
            self._check_hidden(hx[0], expected, "Expected hidden[0] size {}, got {}")
            self._check_hidden(hx[1], expected, "Expected hidden[1] size {}, got {}")
        else:
            self._check_hidden(hx, expected, "Expected hidden size {}, got {}")
        if lstm and input.dtype is _dtype.float32:
            out, hidden = self._run_mkldnn(input, hx)
        else:
            out, hidden = self._run_native(input, hx)
        if not batched:
            out = O.squeeze(out, 1)
            hidden = (O.squeeze(hidden[0], 1), O.squeeze(hidden[1], 1)) if lstm else O.squeeze(hidden, 1)
        return out, hidden

    def _run_native(self, input: Tensor, hx: Any) -> tuple[Tensor, Any]:
        lstm = self.mode == "LSTM"
        if self.batch_first:
            input = O.transpose(input, 0, 1)
        hs = O.unbind(hx[0] if lstm else hx, 0)
        cs = O.unbind(hx[1], 0) if lstm else None
        dirs = 2 if self.bidirectional else 1
        finals: list = []
        layer_input = input
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                p = self._params(layer, d)
                steps = list(O.unbind(linear(layer_input, p[0], p[2]), 0))
                if d == 1:
                    steps.reverse()
                h = hs[k]
                c = cs[k] if lstm else None
                step_outs = []
                for x in steps:
                    if lstm:
                        h, c = _lstm_cell(x, h, c, p, True)
                    elif self.mode == "GRU":
                        h = _gru_cell(x, h, p, True)
                    else:
                        h = _rnn_cell(x, h, p, "tanh" if self.mode == "RNN_TANH" else "relu", True)
                    step_outs.append(h)
                if d == 1:
                    step_outs.reverse()
                outs.append(O.stack(step_outs, 0))
                finals.append((h, c))
            layer_input = outs[0] if dirs == 1 else O.cat(outs, outs[0].dim() - 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        if lstm:
            # torch stacks the cell states first, then the hidden states
            cy = O.stack([c for _, c in finals], 0)
            hy = O.stack([h for h, _ in finals], 0)
            hidden: Any = (hy, cy)
        else:
            hidden = O.stack([h for h, _ in finals], 0)
        # torch's RNN and GRU transpose their output back in place (TransposeBackward1), its LSTM not
        if not self.batch_first:
            out = layer_input
        else:
            out = O.transpose(layer_input, 0, 1) if lstm else transposed_in_place(layer_input, 0, 1)
        return out, hidden

    # -- packed input: torch's PackedLayer / ReversedPackedLayer ----------------------------------

    def _run_packed(self, packed: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """The sequences of a PackedSequence, each step on the batch still running: the hidden
        state's finished rows are sliced off as the batch shrinks (reversed: concatenated as it
        grows), as ATen's packed layers do, whatever the dtype (no oneDNN node here)."""
        lstm = self.mode == "LSTM"
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        sizes = [int(b) for b in batch_sizes.tolist()]
        expected = (self.num_layers * (2 if self.bidirectional else 1), sizes[0], self.hidden_size)
        if hx is None:
            h0 = zeros(*expected, dtype=data.dtype, device=data.device)
            hx = (h0, zeros(*expected, dtype=data.dtype, device=data.device)) if lstm else h0
        else:
            hx = _permute_hidden(hx, sorted_indices, lstm)
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        if self.input_size != data.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {data.shape[-1]}"
            )
        if lstm:
            self._check_hidden(hx[0], expected, "Expected hidden[0] size {}, got {}")
            self._check_hidden(hx[1], expected, "Expected hidden[1] size {}, got {}")
        else:
            self._check_hidden(hx, expected, "Expected hidden size {}, got {}")
        hs = O.unbind(hx[0] if lstm else hx, 0)
        cs = O.unbind(hx[1], 0) if lstm else None
        dirs = 2 if self.bidirectional else 1
        finals: list = []
        layer_input = data
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                state = (hs[k], cs[k]) if lstm else (hs[k],)
                run = self._packed_reversed if d == 1 else self._packed_forward
                out, state = run(layer_input, sizes, state, self._params(layer, d))
                outs.append(out)
                finals.append(state)
            layer_input = outs[0] if dirs == 1 else O.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        if lstm:
            cy = O.stack([s[1] for s in finals], 0)
            hy = O.stack([s[0] for s in finals], 0)
            hidden: Any = (hy, cy)
        else:
            hidden = O.stack([s[0] for s in finals], 0)
        output = PackedSequence(layer_input, batch_sizes, sorted_indices, unsorted_indices)
        return output, _permute_hidden(hidden, unsorted_indices, lstm)

    def _cell(self, x: Tensor, state: tuple, p: tuple) -> tuple:
        if self.mode == "LSTM":
            return _lstm_cell(x, state[0], state[1], p, True)
        if self.mode == "GRU":
            return (_gru_cell(x, state[0], p, True),)
        return (_rnn_cell(x, state[0], p, "tanh" if self.mode == "RNN_TANH" else "relu", True),)

    def _packed_forward(self, data: Tensor, sizes: list[int], state: tuple, p: tuple) -> tuple[Tensor, tuple]:
        projected = linear(data, p[0], p[2])
        finished: list[tuple] = []
        outs = []
        offset, last = 0, sizes[0]
        for b in sizes:
            x = O.narrow(projected, 0, offset, b)
            offset += b
            if last > b:
                finished.append(_each(state, lambda s, b=b, last=last: O.narrow(s, 0, b, last - b)))
                state = _each(state, lambda s, b=b: O.narrow(s, 0, 0, b))
            last = b
            state = self._cell(x, state, p)
            outs.append(state[0])
        finished.append(state)
        finished.reverse()
        return O.cat(outs, 0), _each(tuple(range(len(state))), lambda i: O.cat([f[i] for f in finished], 0))

    def _packed_reversed(self, data: Tensor, sizes: list[int], state0: tuple, p: tuple) -> tuple[Tensor, tuple]:
        projected = linear(data, p[0], p[2])
        outs = []
        offset, last = data.shape[0], sizes[-1]
        state = _each(state0, lambda s: O.narrow(s, 0, 0, last))
        for b in reversed(sizes):
            if b > last:
                grown = _each(state0, lambda s, b=b, last=last: O.narrow(s, 0, last, b - last))
                state = _each(tuple(zip(state, grown)), lambda sg: O.cat(list(sg), 0))
            x = O.narrow(projected, 0, offset - b, b)
            offset -= b
            last = b
            state = self._cell(x, state, p)
            outs.append(state[0])
        outs.reverse()
        return O.cat(outs, 0), state

    def _run_mkldnn(self, input: Tensor, hx: Any) -> tuple[Tensor, Any]:
        if self.batch_first:
            input = O.transpose(input, 0, 1)
        hs, cs = O.unbind(hx[0], 0), O.unbind(hx[1], 0)
        dirs = 2 if self.bidirectional else 1
        hys, cys = [], []
        layer_input = input
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w_ih, w_hh, b_ih, b_hh = self._params(layer, d)
                # oneDNN reads a contiguous input (a transposed batch_first one is copied: CloneBackward0)
                layer_input = O.contiguous(layer_input)
                out, hy, cy = mkldnn_lstm_layer(layer_input, w_ih, w_hh, b_ih, b_hh, hs[k], cs[k], d == 1)
                outs.append(out)
                hys.append(hy)
                cys.append(cy)
            layer_input = outs[0] if dirs == 1 else O.cat(outs, outs[0].dim() - 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        hy = O.stack(hys, 0)
        cy = O.stack(cys, 0)
        out = O.transpose(layer_input, 0, 1) if self.batch_first else layer_input
        return out, (hy, cy)


def _each(items: tuple, fn: Any) -> tuple:
    """fn of each item, computed last item first: ATen builds an LSTM's (h, c) pairs with
    make_tuple, whose arguments GCC evaluates right to left (c's node before h's)."""
    return tuple(reversed([fn(x) for x in reversed(items)]))


def _permute_hidden(hx: Any, permutation: Tensor | None, lstm: bool) -> Any:
    """The hidden state's batch put in the packed order (or back): an index_select on dim 1."""
    if permutation is None:
        return hx
    if lstm:
        return O.index_select(hx[0], 1, permutation), O.index_select(hx[1], 1, permutation)
    return O.index_select(hx, 1, permutation)


class RNN(RNNBase):
    def __init__(self, *args: Any, nonlinearity: str = "tanh", **kwargs: Any) -> None:
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)

    def _check_input(self, input: Tensor) -> bool:
        if input.dim() not in (2, 3):
            raise ValueError(f"RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
        return super()._check_input(input)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return self._run(input, hx)


class LSTM(RNNBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Any]:
        return self._run(input, hx)


class GRU(RNNBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return self._run(input, hx)


class RNNCellBase(Module):
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(empty(g, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(g, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(g, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(g, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def _prepare(self, input: Tensor, hx: Any, n_states: int) -> tuple[Tensor, list, bool]:
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}"
            )
        batched = input.dim() == 2
        if not batched:
            input = O.unsqueeze(input, 0)
        if hx is None:
            states = [zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
                      for _ in range(n_states)]
        else:
            states = list(hx) if n_states == 2 else [hx]
            if not batched:
                states = [O.unsqueeze(s, 0) for s in states]
        return input, states, batched

    def _params(self) -> tuple:
        return (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(input, hx, 1)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = _rnn_cell(x, h, self._params(), self.nonlinearity, False)
        return out if batched else O.squeeze(out, 0)


class LSTMCell(RNNCellBase):
    _gates = 4

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, (h, c), batched = self._prepare(input, hx, 2)
        hy, cy = _lstm_cell(x, h, c, self._params(), False)
        return (hy, cy) if batched else (O.squeeze(hy, 0), O.squeeze(cy, 0))


class GRUCell(RNNCellBase):
    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(input, hx, 1)
        out = _gru_cell(x, h, self._params(), False)
        return out if batched else O.squeeze(out, 0)
