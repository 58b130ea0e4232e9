"""Keep numpy's floating-point RuntimeWarnings inside gradviz quiet, as torch is.

torch computes log(0) = -inf, 0/0 = nan, sqrt(-1) = nan silently; numpy warns ("divide by zero
encountered in log", "invalid value encountered in divide"), and every op and backward formula of
gradviz is numpy. One warnings filter, scoped to warnings attributed to gradviz's own modules and
to those four numpy messages, silences them: the user's own numpy code still warns, ops pay
nothing (a filter is consulted only when a warning is raised, where np.errstate around each op
would cost every call), and nothing of numpy's global error state changes.
A filter the user adds later (``-W error``, ``simplefilter``) takes precedence, as warnings filters do.
"""

from __future__ import annotations

import warnings

_MESSAGE = r"(divide by zero|invalid value|overflow|underflow) encountered"


def install() -> None:
    warnings.filterwarnings("ignore", message=_MESSAGE, category=RuntimeWarning, module=r"gradviz(\.|$)")


install()
