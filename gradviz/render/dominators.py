"""The graph the collapse passes work on: a dominator tree over the model (``gradviz.render.model``).

Split out of model.py, which re-exports these names.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradviz.render.model import GraphModel

MIN_CHAIN = 3  # a run of fewer single-in single-out nodes is left as it is
MAX_PERIOD = 64  # longest repeated block (in nodes along the main path) looked for


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        p = self.parent
        root = x
        while p.get(root, root) != root:
            root = p[root]
        while p.get(x, x) != root:  # path compression keeps later finds O(1)
            p[x], x = root, p[x]
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
        return ra


VROOT = -1  # a virtual root above every real root, so one dominator tree covers the graph


class _Graph:
    """The model's graph with a dominator tree: the structure the collapse passes work on.

    A node's dominator subtree (its "region") is everything that only receives gradient through
    it, so cutting the graph along dominator-tree paths never hides an edge entering a box
    anywhere but at its top.
    """

    def __init__(self, model: GraphModel) -> None:
        self.model = model
        nodes = model.nodes
        succ: dict[int, list[tuple[int, int, int]]] = {n: [] for n in nodes}  # (slot, dst, input_nr)
        pred: dict[int, list[int]] = {n: [] for n in nodes}
        for e in model.edges:
            succ[e.src].append((e.slot, e.dst, e.input_nr))
            pred[e.dst].append(e.src)
        heads = [n for n in nodes if not pred[n]]
        succ[VROOT] = [(i, h, 0) for i, h in enumerate(heads)]
        for h in heads:
            pred[h].append(VROOT)
        self.succ, self.pred = succ, pred
        self.name = {n: v.name for n, v in nodes.items()}
        self.name[VROOT] = ""
        # Kahn's order from the virtual root: every edge goes forward in it.
        indeg = {n: len(p) for n, p in pred.items()}
        order = [VROOT]
        i = 0
        while i < len(order):
            for _, d, _ in succ[order[i]]:
                indeg[d] -= 1
                if indeg[d] == 0:
                    order.append(d)
            i += 1
        self.order = order  # a cycle (not possible in a backward graph) leaves nodes out
        pos = {n: k for k, n in enumerate(order)}
        idom: dict[int, int] = {VROOT: VROOT}
        for n in order[1:]:  # on a DAG, one pass in topological order gives exact dominators
            pr = pred[n]
            if len(pr) == 1 and pr[0] in idom:  # most nodes of a long graph: its one predecessor
                idom[n] = pr[0]
                continue
            ps = [p for p in pr if p in idom]
            d = ps[0]
            for p in ps[1:]:
                a, b = d, p
                while a != b:
                    while pos[a] > pos[b]:
                        a = idom[a]
                    while pos[b] > pos[a]:
                        b = idom[b]
                d = a
            idom[n] = d
        self.idom = idom
        kids: dict[int, list[int]] = defaultdict(list)
        for n in order[1:]:
            kids[idom[n]].append(n)
        self.kids = kids
        size = dict.fromkeys(order, 1)
        for n in reversed(order[1:]):
            size[idom[n]] += size[n]
        self.size = size
        self.heavy = {n: ks[0] if len(ks) == 1 else max(ks, key=size.__getitem__) for n, ks in kids.items()}
        # Structural hash of each region: names, edge slots and the regions below, so two
        # regions with equal hashes are (up to hash collisions) the same subgraph.
        h: dict[int, int] = {}
        light: dict[int, int] = {}  # the same with the heavy child left out: one block of a path
        heavy, name = self.heavy, self.name
        for n in reversed(order):
            hv = heavy.get(n)
            toks: list[object] = []
            ltoks: list[object] = []
            out = succ[n]
            reached = 0  # edges to nodes n dominates (each such node is one of its kids)
            for slot, d, nr in out:
                if idom.get(d) == n:
                    hd = h[d]
                    toks.append((slot, nr, hd))
                    ltoks.append((slot, nr, "next" if d == hv else hd))
                    reached += 1
                else:
                    tok = (slot, nr, "x", name[d])
                    toks.append(tok)
                    ltoks.append(tok)
            ks = kids.get(n)
            # The dominated nodes no edge of n reaches directly: none when n has one kid and an
            # edge to it (most nodes of a long graph), or no kids at all.
            if ks and not reached == len(ks) == 1:
                direct = {d for _, d, _ in out}
                rest: Any = sorted(h[k] for k in ks if k not in direct)
                lrest: Any = sorted(h[k] for k in ks if k not in direct and k != hv)
            else:
                rest = lrest = ()
            nm = name[n]
            h[n] = hash((nm, tuple(toks), tuple(rest)))
            light[n] = hash((nm, tuple(ltoks), tuple(lrest)))
        self.hash, self.light = h, light

    def region(self, n: int, *, skip: int | None = None) -> list[int]:
        """n and every node it dominates (leaving out ``skip``'s region)."""
        out = []
        stack = [n]
        while stack:
            x = stack.pop()
            out.append(x)
            stack.extend(k for k in self.kids.get(x, ()) if k != skip)
        return out

    def paths(self) -> list[list[int]]:
        """The heavy paths of the dominator tree, heaviest first (the virtual root left out)."""
        out = []
        heads = [VROOT]
        kids, heavy = self.kids, self.heavy
        while heads:
            head = heads.pop()
            path = []
            n: int | None = head
            while n is not None:
                path.append(n)
                hv = heavy.get(n)
                ks = kids.get(n)
                if ks and len(ks) > 1:  # (a lone kid is the heavy one)
                    heads.extend(k for k in ks if k != hv)
                n = hv
            if head == VROOT:
                path = path[1:]
            out.append(path)
        return [p for p in out if p]

    def chains(self) -> list[list[int]]:
        """Maximal runs of at least MIN_CHAIN nodes linked one to one (one out, one in)."""
        succ, pred = self.succ, self.pred
        # Roots stay drawn on their own: where backward started is what a reader looks for first.
        one_out = {n for n, v in self.model.nodes.items() if len(succ[n]) == 1 and v.kind == "op"}
        runs = []
        for n in self.order[1:]:
            p = pred[n]
            if len(p) == 1 and p[0] in one_out or self.model.nodes[n].kind in ("root", "graph_root"):
                continue  # not the start of a run
            run = [n]
            while run[-1] in one_out:
                d = succ[run[-1]][0][1]
                if len(pred[d]) != 1:
                    break
                run.append(d)
            if len(run) >= MIN_CHAIN:
                runs.append(run)
        return runs

    def repeats(self) -> list[tuple[list[int], int]]:
        """Runs of identical consecutive blocks along heavy paths: (members, number of blocks).

        The first block of a run stays drawn, so the reader sees what a block is; the rest of
        the run becomes one box. A block is a stretch of a heavy path with everything hanging
        off it (the light regions), compared by structural hash.
        """
        out = []
        for path in self.paths():
            lab = [self.light[n] for n in path]
            i = 0
            k = len(lab)
            while i < k:
                best = (0, 0, 0)  # (covered nodes, -period, reps)
                for p in range(1, min(MAX_PERIOD, (k - i) // 3) + 1):
                    if lab[i] != lab[i + p]:  # cheap filter: most positions start no repeat
                        continue
                    if (k - i) // p * p <= best[0]:  # covers no more than the best (a longer period loses ties)
                        continue
                    reps = 1
                    block = lab[i : i + p]
                    while i + (reps + 1) * p <= k and lab[i + reps * p : i + (reps + 1) * p] == block:
                        reps += 1
                    if reps >= 3 and (reps * p, -p) > best[:2]:
                        best = (reps * p, -p, reps)
                if best[2]:
                    p, reps = -best[1], best[2]
                    members: list[int] = []
                    for n in path[i + p : i + reps * p]:
                        members.extend(self.region(n, skip=self.heavy.get(n)))
                    if len(members) >= 2:
                        out.append((members, reps - 1))
                    i += reps * p
                else:
                    i += 1
        return out

    def segments(self, uf: _UnionFind, max_nodes: int) -> list[list[int]]:
        """Cut the heavy paths into segments (a stretch and what hangs off it) so that, merged
        with the boxes already made, at most ``max_nodes`` boxes remain. Segment size grows until
        it fits; at worst everything is one box."""
        total = len(self.model.nodes)
        seg_size = max(2, total // max(1, max_nodes))
        while True:
            segs = self._segments(seg_size, uf)
            merged = _UnionFind()
            merged.parent = dict(uf.parent)
            for s in segs:
                for m in s[1:]:
                    merged.union(s[0], m)
            if len({merged.find(n) for n in self.model.nodes}) <= max_nodes or seg_size >= total:
                return segs
            seg_size = min(total, int(seg_size * 1.6) + 1)

    def _segments(self, size: int, uf: _UnionFind) -> list[list[int]]:
        out = []
        heads = [VROOT]
        while heads:
            n: int | None = heads.pop()
            cur: list[int] = []
            while n is not None:
                cur.append(n)
                for k in self.kids.get(n, ()):
                    if k == self.heavy.get(n):
                        continue
                    if self.size[k] < size:
                        cur.extend(self.region(k))
                    else:
                        heads.append(k)
                nxt = self.heavy.get(n)
                # Cut only between boxes already made: a cut inside one would merge the two
                # segments again and leave far fewer, bigger boxes than asked for.
                if len(cur) >= size and (nxt is None or n == VROOT or uf.find(n) != uf.find(nxt)):
                    out.append(cur)
                    cur = []
                n = nxt
            if cur:
                out.append(cur)
        # Roots stay drawn on their own, as in chains.
        keep = {n for n, v in self.model.nodes.items() if v.kind not in ("root", "graph_root")}
        return [s for s in ([m for m in seg if m in keep] for seg in out) if len(s) > 1]
