"""Nodes whose saved tensors went through saved_tensors_hooks: unpack them as torch's nodes do.

gradviz's formulas read a saved tensor when they need it (``n["self"]``), so without hooks a
tensor is looked at once per formula that uses it, which nobody can see. With an unpack hook
everyone can: torch's generated ``apply`` unpacks every saved variable exactly once, first,
whatever outputs are needed, in its code generator's order (the saved inputs sorted by name,
then the saved outputs sorted by name: MulBackward0 unpacks ``other`` before ``self``). A node
that holds a packed variable gets a subclass (same name, same formulas) whose entry points do
that, then run the formulas on the unpacked tensors. Nodes without hooks never pay for it.

Packing follows the same order (gradviz/autograd/graph_hooks.py packs a node's saves when
record() makes it). Not covered: a few rows keep as plain arrays what torch saves as tensors
(where's condition, max.dim's and max_pool's indices, batch_norm's saved mean and invstd,
index/gather/embedding indices, nll_loss's target), so no hook sees them.
"""

from __future__ import annotations

from typing import Any

from gradviz.autograd.saved_variable import SavedVariable

# OpNode class -> its hooked subclass, made once per class.
_HOOKED: dict[type, type] = {}
_SUBCLASSES: set[type] = set()


def is_hooked(cls: type) -> bool:
    """Whether cls is already one of the hooked subclasses."""
    return cls in _SUBCLASSES


class _Resolved(dict):
    """A node's saved values while its apply runs: each packed variable replaced by one that
    already holds its unpacked tensor. Its type marks an apply in progress (no second unpack
    when apply reaches apply_needed)."""


def any_packed(saved: dict[str, Any]) -> bool:
    """Whether saved_tensors_hooks packed one of these saved values."""
    for v in saved.values():
        if type(v) is SavedVariable:
            if getattr(v, "_packed", None) is not None:
                return True
        elif type(v) is list and v and type(v[0]) is SavedVariable:
            if any(getattr(s, "_packed", None) is not None for s in v):
                return True
    return False


def _holding(t: Any, like: SavedVariable) -> SavedVariable:
    # A variable already unpacked: unpack() gives t back as it is (its grad_fn set by the
    # unpack that made it), and the fast paths that read .tensor see its data.
    sv = object.__new__(SavedVariable)
    sv.tensor = t
    sv.version = t._version_counter[0]
    sv.released = False
    sv.is_output = False
    sv.shape = like.shape
    sv.output_nr = like.output_nr
    sv._packed = None
    return sv


def _resolve(node: Any) -> _Resolved:
    saved = node.saved
    out = _Resolved(saved)

    def is_output(v: Any) -> bool:
        return (v[0] if type(v) is list else v).is_output

    names = [k for k, v in saved.items()
             if type(v) is SavedVariable or (type(v) is list and v and type(v[0]) is SavedVariable)]
    for k in sorted(names, key=lambda k: (is_output(saved[k]), k)):
        v = saved[k]
        if type(v) is list:
            out[k] = [_holding(s.unpack(node), s) for s in v]
        else:
            out[k] = _holding(v.unpack(node), v)
    return out


def hooked_class(cls: type) -> type:
    """cls's subclass (same name and formulas) that unpacks its saved variables first."""
    sub = _HOOKED.get(cls)
    if sub is not None:
        return sub

    def run(self: Any, method: Any, *args: Any) -> Any:
        saved = self.saved
        if type(saved) is _Resolved:
            return method(self, *args)
        self.saved = _resolve(self)
        try:
            return method(self, *args)
        finally:
            self.saved = saved  # release_variables and _saved_* read the packed variables

    def apply(self: Any, grads: list) -> list:
        return run(self, cls.apply, grads)

    def _apply_all(self: Any, grads: list) -> list:
        return run(self, cls._apply_all, grads)

    def apply_needed(self: Any, grads: list, needed: list) -> list:
        return run(self, cls.apply_needed, grads, needed)

    sub = type(cls.__name__, (cls,), {
        "__slots__": (), "__qualname__": cls.__qualname__, "__module__": cls.__module__,
        "apply": apply, "_apply_all": _apply_all, "apply_needed": apply_needed,
    })
    _HOOKED[cls] = sub
    _SUBCLASSES.add(sub)
    return sub
