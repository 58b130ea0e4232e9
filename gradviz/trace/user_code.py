"""Which code is the user's: the line an answer points at is in the program, not in gradviz,
torch, an installed package or Python's standard library."""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import Any

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gradviz/
# not the user's: gradviz, the checkout's cli/, installed packages (torch among them), the stdlib
_NOT_USER = tuple(sorted({
    _PKG_DIR + os.sep,
    os.path.join(os.path.dirname(_PKG_DIR), "cli") + os.sep,
    *(os.path.realpath(p) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
      if (p := sysconfig.get_paths().get(k))),
    *(p + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
      if (p := sysconfig.get_paths().get(k))),
}))


def is_user_file(fname: str) -> bool:
    """Whether code from ``fname`` is the program's (frozen modules and packages are not)."""
    return not (fname.startswith(_NOT_USER) or fname.startswith("<frozen"))


def error_site(exc: BaseException) -> str | None:
    """``file:line`` of the user's code an exception came from: the innermost user frame of its
    traceback (a hook's or a custom Function's line), else of the stack that is handling it (the
    user's backward() call, for an error the engine raised in a node of torch's)."""
    tb = exc.__traceback__
    site = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            site = f"{code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return site if site is not None else user_site(2)


def user_site(depth: int = 1) -> str | None:
    """``file:line`` of the innermost frame of the program on the calling stack."""
    f: Any = sys._getframe(depth)
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return None
