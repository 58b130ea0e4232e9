"""SavedVariable: a tensor a backward node keeps for its formula, with the version counter it
had when saved, so a later in-place change is caught at unpack with torch's message (torch's
``saved_variable.h``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gradviz import _dtype
from gradviz.autograd import forward_state as _forward_state

if TYPE_CHECKING:
    from gradviz.autograd.graph import Node
    from gradviz.tensor import Tensor


class SavedVariable:
    """A tensor a node kept for backward, with the version it had when saved."""

    __slots__ = ("tensor", "version", "released", "is_output", "shape", "output_nr", "_packed")

    def __init__(self, tensor: Tensor, is_output: bool = False):
        # The counter itself, not Tensor._version (which builds a snapshot object per read).
        self.version = tensor._version_counter[0]
        self.released = False
        self.is_output = is_output
        self.shape = tensor._data.shape
        self.output_nr = tensor._output_nr
        if _saved_hooks_active and _hooks.pack_saved(self, tensor, is_output):
            return  # saved_tensors_hooks: _packed holds the packed value, tensor stays None
        if is_output:
            # Holding the output itself would make a cycle (output -> grad_fn -> this node ->
            # output) that keeps the graph alive until the garbage collector runs. As torch does,
            # keep an alias without grad_fn and give it back its grad_fn in unpack.
            alias = type(tensor)._wrap(tensor._data, tensor.dtype, tensor.device)
            alias._version_counter = tensor._version_counter
            self.tensor: Tensor | None = alias
        else:
            self.tensor = tensor

    def unpack(self, saved_for: Node | None = None) -> Tensor:
        t = self.tensor
        if self.released or t is None:
            if not self.released and getattr(self, "_packed", None) is not None:
                return _hooks.unpack_saved(self, saved_for)
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if t._version_counter[0] != self.version:
            raise RuntimeError(
                _modified_message(t, self.version, saved_for if self.is_output else None, self.output_nr)
            )
        if self.is_output and saved_for is not None:
            out = type(t)._wrap(t._data, t.dtype, t.device)
            out._version_counter = t._version_counter
            out._grad_fn = saved_for
            out._output_nr = self.output_nr
            if t._fw_grad is not None:  # forward AD: the output's tangent (forward over reverse)
                _forward_state.give_tangent(out, t._fw_grad)
            return out
        return t

    def release(self) -> None:
        self.tensor = None
        self._packed = None
        self.released = True


# saved_tensors_hooks contexts open on any thread: while 0 a save pays one global read for them.
# _hooks is gradviz.autograd.graph_hooks, set when it is imported (it imports this module).
_saved_hooks_active = 0
_hooks: Any = None


ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def _modified_message(t: Tensor, expected: int, saver: Node | None = None, output_nr: int = 0) -> str:
    from gradviz.autograd.grad_mode import anomaly  # grad_mode imports the tensor module

    kind = _dtype.scalar_type_name(t.dtype)
    dims = ", ".join(str(d) for d in t.shape)
    # A saved output names the node that saved it (its grad_fn when saved), a saved input its
    # grad_fn now, as torch does; torch names the op, not its node ("Exp" for ExpBackward0,
    # "Sq" for a Function Sq's SqBackward).
    fn, nr = (saver, output_nr) if saver is not None else (t.grad_fn, t._output_nr)
    where = f", which is output {nr} of {_BACKWARD_SUFFIX.sub('', fn.name())}," if fn is not None else ""
    hint = (
        "Hint: the backtrace further above shows the operation that failed to compute its gradient. "
        "The variable in question was changed in there or anywhere later. Good luck!"
        if anomaly.enabled
        else "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.{kind}Tensor [{dims}]]{where} is at version {t._version_counter[0]}; "
        f"expected version {expected} instead. {hint}"
    )
