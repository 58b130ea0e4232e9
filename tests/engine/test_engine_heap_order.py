"""The ready queue's order among equal keys, against torch 2.13: torch's ReadyQueue is a
std::priority_queue with no tie-breaker, so nodes with one key (AccumulateGrads, which all carry
the largest sequence_nr, made ready by one node) run in the order libstdc++'s heap pops them."""

from __future__ import annotations

import random
import shutil
import subprocess
from types import SimpleNamespace

import pytest

import tests._diff as diff
from gradviz.autograd.ready_queue import NodeTask, ReadyQueue


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 13])
def test_stack_of_leaves_runs_accumulate_grads_in_torchs_order(n):
    def prog(T):
        xs = [diff.leaf(T, 3, seed=i) for i in range(n)]
        y = T.stack(xs).sum()
        return diff.Case(roots=[y], run=y.backward, grads_of=xs)

    ref, _ = diff.check(prog)  # execution order compared node for node
    assert len(ref.order) == n + 2


@pytest.mark.parametrize("n", [5, 9])
def test_node_with_many_leaf_inputs(n):
    # cat: one node whose inputs are all leaves; then more work after it.
    def prog(T):
        xs = [diff.leaf(T, 2, seed=i) for i in range(n)]
        y = (T.cat(xs) * 2.0).tanh().sum()
        return diff.Case(roots=[y], run=y.backward, grads_of=xs)

    diff.check(prog)


def test_two_nodes_each_making_leaves_ready():
    # Leaves made ready by two nodes, with one leaf shared: the heap's order mixes both batches.
    def prog(T):
        xs = [diff.leaf(T, 2, seed=i) for i in range(6)]
        a = T.stack(xs[:4]).sum()
        b = T.stack(xs[3:]).prod()
        y = a * b
        return diff.Case(roots=[y], run=y.backward, grads_of=xs)

    diff.check(prog)


class _Queue:
    """A ReadyQueue of node tasks with the given sequence numbers (nothing recording)."""

    def __init__(self) -> None:
        self.q = ReadyQueue("cpu", "test", announce=False)

    def push(self, seq: int, ident: int) -> None:
        task = NodeTask(None, SimpleNamespace(sequence_nr=seq), [])  # type: ignore[arg-type]
        task.task_id = ident  # unused by the queue: names the entry here
        self.q.push(task, increment_outstanding=False)

    def pop(self) -> int:
        return self.q.pop().task_id  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.q)


def test_five_equal_keys_pop_as_1_3_5_2_4():
    q = _Queue()
    for i in range(1, 6):
        q.push(7, i)
    assert [q.pop() for _ in range(5)] == [1, 3, 5, 2, 4]


_CPP = r"""
#include <queue>
#include <vector>
#include <cstdio>
struct E { int key; int id; };
struct C { bool operator()(const E& a, const E& b) const { return a.key < b.key; } };
int main() {
  std::priority_queue<E, std::vector<E>, C> q; char op[4]; int k; int id = 0;
  while (scanf("%3s", op) == 1) {
    if (op[0] == 'p') { if (scanf("%d", &k) != 1) return 1; q.push({k, id++}); }
    else { printf("%d\n", q.top().id); q.pop(); }
  }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build libstdc++'s priority_queue")
def test_heap_matches_libstdcxx_priority_queue(tmp_path):
    src = tmp_path / "h.cpp"
    src.write_text(_CPP)
    exe = tmp_path / "h"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], check=True)
    rng = random.Random(0)
    for _ in range(200):
        ops, q, got, nid = [], _Queue(), [], 0
        for _ in range(rng.randint(1, 60)):
            if len(q) and rng.random() < 0.4:
                ops.append("o")
                got.append(q.pop())
            else:
                k = rng.randint(0, 3)
                ops.append(f"p {k}")
                q.push(k, nid)
                nid += 1
        while len(q):
            ops.append("o")
            got.append(q.pop())
        out = subprocess.run([str(exe)], input="\n".join(ops), capture_output=True, text=True, check=True).stdout
        assert got == [int(x) for x in out.split()], ops
