"""Runs last (the folder's files run in name order): the tests before it left no file in the
checkout. conftest.py's session-finish check says the same for any subset of the tests."""

from __future__ import annotations

import pytest
from conftest import untracked


def test_the_suite_left_no_new_file_in_the_checkout(untracked_at_start):
    now = untracked()
    if untracked_at_start is None or now is None:
        pytest.skip("not a git checkout: nothing to compare")
    new = sorted(now - untracked_at_start)
    assert new == [], f"the tests wrote {new[:10]} into the checkout: write into tmp_path instead"
