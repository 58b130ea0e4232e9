"""torch.fork / torch.wait and torch.Future's basic API in eager mode, against torch 2.13
(coverage2, issue 34)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradviz


def _program(T: Any) -> list:
    seen = []
    fut = T.fork(lambda a, b=0: a * 2 + b, 3, b=1)
    seen += [type(fut).__name__, fut.done(), T.wait(fut), fut.wait(), fut.value()]
    chained = fut.then(lambda f: f.value() + 100)
    seen += [chained.wait()]
    fut.add_done_callback(lambda f: seen.append(("callback", f.value())))
    tensor_fut = T.fork(T.add, T.ones(2), 1)
    seen += [T.wait(tensor_fut).tolist()]
    return seen


def test_fork_and_wait_match_torch() -> None:
    assert _program(gradviz) == _program(torch)


def test_a_future_completes_once_as_torch() -> None:
    msgs = []
    for fut in (torch.futures.Future(), gradviz.Future()):
        assert fut.done() is False
        fut.set_result(1)
        with pytest.raises(RuntimeError) as info:
            fut.set_result(2)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
