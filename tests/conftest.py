"""The suite: one folder per module under test (engine, ops, nn, optim, data, trace, replay, render,
cli, torchrec, corpus). The shared builders stay here, importable from every folder (pyproject's
``pythonpath``): ``_diff``/``_nn_diff``/``_surface`` (differential checks against torch),
``trace_builders`` (small traces), ``torchrec_programs``, ``mutants``, ``fakecupy``."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo() -> Path:
    """The repository's root (tests that read samples/, docs/ or README.md)."""
    return REPO
