"""What every test shares. The suite has one folder per module under test (engine, ops, nn, optim,
data, trace, replay, render, view, why, func, distributions, distributed, cli, torchrec, corpus);
the shared builders stay here, importable from every folder (pyproject's ``pythonpath``):
``_diff``/``_nn_diff``/``_surface`` (differential checks against torch), ``trace_builders`` (small
traces), ``torchrec_programs``, ``mutants``, ``fakecupy``, ``_chromium``. CLI tests run in their
own folder, and the suite leaves the checkout as it found it (issue 29: a test wrote
prog.trace.json into the repository root on every run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo() -> Path:
    """The repository's root (tests that read samples/, docs/ or README.md)."""
    return ROOT


@pytest.fixture(autouse=True)
def _cli_tests_run_in_tmp_path(request: pytest.FixtureRequest) -> None:
    """A command's default output (x.trace.json, x.svg, x.perfetto.json) goes to the current
    folder: for the CLI's tests that is the test's tmp_path, never the repository."""
    if request.node.path.name.startswith(("test_cli", "test_replay_cli")):
        tmp_path = request.getfixturevalue("tmp_path")
        request.getfixturevalue("monkeypatch").chdir(tmp_path)


# What a test run makes by itself: caches and byte code, not a test's output.
_CACHES = ("__pycache__/", ".pytest_cache/", ".hypothesis/", ".ruff_cache/", ".egg-info/", ".venv/")


def untracked() -> set[str] | None:
    """The checkout's files that git does not track, the ignored ones too (``*.trace.json`` is
    ignored, and is what a command's default output into the repository would be), caches and
    the virtual environment aside; None without git."""
    try:
        r = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return {line[3:] for line in r.stdout.splitlines()
            if line[:3] in ("?? ", "!! ") and not any(c in line for c in _CACHES)}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_BEFORE] = untracked()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite fails if it left a file in the checkout (tests/test_zz_checkout_unchanged.py
    says which, as a test, when the whole folder runs)."""
    before = session.config.stash.get(_BEFORE, None)
    after = untracked()
    if before is None or after is None:
        return
    new = sorted(after - before)
    if new:
        session.config.stash[_LEFT] = new
        print(f"\nerror: the tests left {len(new)} new file(s) in the checkout: {', '.join(new[:10])}")
        if session.exitstatus == 0:
            session.exitstatus = 1


_BEFORE = pytest.StashKey[set[str] | None]()
_LEFT = pytest.StashKey[list[str]]()


@pytest.fixture
def untracked_at_start(request: pytest.FixtureRequest) -> set[str] | None:
    return request.config.stash.get(_BEFORE, None)
