"""Tensor ops (by family: see gradviz.ops.functions) and the methods and operators they give Tensor."""

from __future__ import annotations

from gradviz.ops import functions as _functions
from gradviz.ops import methods as _methods
from gradviz.ops.functions import *  # noqa: F403 - the op namespace (functions.__all__)

__all__ = _functions.__all__

_methods.bind()
