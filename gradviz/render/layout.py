"""A layered layout computed here, for pictures too big for graphviz's own layouts.

dot's crossing minimisation and sfdp's force model both take minutes past ~10,000 boxes. This
layout is linear: rank = longest path from a root (gradient flows down the page), order
within a rank by the mean position of the box's parents (one barycentre sweep, which already
keeps most edges short on backward graphs), x spacing from label widths. graphviz then only
draws (``neato -n2`` with fixed positions and straight edges).
"""

from __future__ import annotations

from collections import defaultdict

CHAR_W = 6.5  # points per character of an 11pt Helvetica label, roughly
GAP_X = 18.0
RANK_H = 72.0


def layered(units: list[str], edges: list[tuple[str, str]], widths: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Positions (points) for boxes ``units`` joined by ``edges`` (drawn from top to bottom)."""
    succ: dict[str, list[str]] = defaultdict(list)
    indeg = dict.fromkeys(units, 0)
    for a, b in edges:
        if a in indeg and b in indeg and a != b:
            succ[a].append(b)
            indeg[b] += 1
    rank = dict.fromkeys(units, 0)
    order = [u for u in units if indeg[u] == 0]
    i = 0
    while i < len(order):
        u = order[i]
        i += 1
        for v in succ[u]:
            rank[v] = max(rank[v], rank[u] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                order.append(v)
    seen = set(order)
    order += [u for u in units if u not in seen]  # a cycle (only between collapsed boxes)
    parents: dict[str, list[str]] = defaultdict(list)
    for a in units:
        for b in succ[a]:
            parents[b].append(a)
    by_rank: dict[int, list[str]] = defaultdict(list)
    for u in order:
        by_rank[rank[u]].append(u)
    pos: dict[str, tuple[float, float]] = {}
    centre: dict[str, float] = {}
    for r in sorted(by_rank):
        row = by_rank[r]
        if r > 0:
            row.sort(key=lambda u: _mean([centre[p] for p in parents[u] if p in centre], default=0.0))
        x = 0.0
        for u in row:
            w = widths.get(u, 80.0)
            centre[u] = x + w / 2
            x += w + GAP_X
        shift = x / 2  # centre each rank on x = 0
        for u in row:
            centre[u] -= shift
            pos[u] = (centre[u], -r * RANK_H)
    return pos


def _mean(xs: list[float], default: float) -> float:
    return sum(xs) / len(xs) if xs else default
