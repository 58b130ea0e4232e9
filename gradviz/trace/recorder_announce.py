"""The recorder's announcements: a node, its edges and the leaves it reaches, written before the
first step that names them (a mixin of Recorder)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from gradviz.trace import codec
from gradviz.trace.codec import Raw
from gradviz.trace.summaries import VALUES_MAX, _dtype_name, _host, _now, _stats_row


class AnnounceMixin:
    """Recorder's node and tensor announcements."""

    def _node(self, node: Any, tid: int) -> int:
        """node's id, after emitting node_created (and those of its unknown successors) if needed.

        A graph built before the recording began is announced here in one walk, on the first step
        that names one of its nodes (for a backward, task_begin's roots): its rows share one
        timestamp, the moment it was announced."""
        nid = node._id
        known = self._nodes
        if nid in known:
            return nid
        if self._closed:
            return nid
        ts = _now() - self._t0
        # Edges go into a file's rows as the engine's own Edge tuples: the JSON encoder writes
        # their nodes as ids (codec's hook), for a fraction of what building id pairs here costs.
        # Kept in memory, rows hold ids, so that they do not keep the graph alive.
        by_id = self._writer is None
        row = self._row
        for f, _ in node.next_edges:
            if f is not None and f._id not in known:
                break
        else:
            # Its successors are all announced: a graph recorded as it is built (a forward under
            # gradviz run) comes here once a node, with no walk to make.
            made, leaf = row(node, ts, tid, by_id)
            rows = self._rows
            if leaf is not None:
                rows.append(leaf)
            rows.append(made)
            known.add(nid)  # after its rows: see the note on SPILL_ROWS
            self._edges += made[8]
            if len(rows) >= self._spill_at:
                self._spill()
            return nid
        n_edges = 0
        # One pass finds the unknown nodes (breadth first) and makes their rows; then the rows
        # are sorted by topological_nr, which puts every node after the nodes its edges point to
        # (so that an edge names a node announced before it): a node's topological_nr is one more
        # than the largest of its successors' (torch's rule, kept by every way a node is made).
        # The pass checks the rule on the way; a graph that breaks it gets a depth-first order.
        made_rows: list[tuple] = []
        keep = made_rows.append
        leaves: dict[int, tuple] = {}  # node id -> the tensor_created row of its leaf
        todo = [node]
        seen = {nid}
        see = seen.add
        push = todo.append
        ordered = True
        for n in todo:  # grows as it goes
            topo = n.topological_nr
            for f, _ in n.next_edges:
                if f is not None:
                    fid = f._id
                    if fid not in known:
                        if fid not in seen:
                            see(fid)
                            push(f)
                        if f.topological_nr >= topo:
                            ordered = False
            made, leaf = row(n, ts, tid, by_id)
            if leaf is not None:  # goes just before the node's row
                leaves[made[3]] = leaf
            keep(made)
            n_edges += made[8]
        if ordered:
            made_rows.sort(key=_topo_of_row)
        else:
            row_of = {r[3]: r for r in made_rows}
            made_rows = [row_of[n._id] for n in _walk(node, known)]
        if leaves:  # AccumulateGrads (topological_nr 0) come first: a short loop
            out: list[tuple] = []
            left = len(leaves)
            i = 0
            for i, r in enumerate(made_rows):  # noqa: B007 - i is used after the loop
                leaf = leaves.get(r[3])
                if leaf is not None:
                    out.append(leaf)
                    left -= 1
                out.append(r)
                if not left:
                    break
            out += made_rows[i + 1 :]
            made_rows = out
        rows = self._rows
        rows.extend(made_rows)
        known.update(seen)  # after their rows: see the note on SPILL_ROWS
        self._edges += n_edges
        if len(rows) >= self._spill_at:
            self._spill()
        return nid

    def _row(self, n: Any, ts: int, tid: int, by_id: bool) -> tuple[tuple, tuple | None]:
        """Node n's node_edges row, and the tensor_created row of its leaf when that is not
        announced yet (an AccumulateGrad's), else None."""
        edges = n.next_edges
        info = _CLASS_INFO.get(type(n))
        if info is None:
            info = _class_info(type(n))
        name, has_var, plain_device, saved_how = info
        if name is None:
            name = n.name()
        tensor = leaf = None
        if has_var:
            var = n.variable
            if var is not None:
                tensor = var._id
                leaf = self._tensor_row(var, tid, None)
        md = n.input_metadata
        if plain_device:  # Node.device, without the property and str() of the same device again
            if md:
                d = md[0][2]  # (shape, dtype, device)
                last = self._device_seen
                if last[0] is d:
                    device = last[1]
                else:
                    device = str(d)
                    self._device_seen = (d, device)
            else:
                device = "cpu"
        else:
            device = n.device
            if type(device) is not str:
                device = str(device)
        # saved_how: 0 saves nothing (Node's), 1 an OpNode's: tensors (SavedVariables, lists of
        # them) among plain values (a chain's scalar factors), 2 ask the node
        saved = None
        if saved_how == 1:
            for v in n.saved.values():
                if type(v) is _SavedVariable or type(v) is list:
                    saved = n.saved_shapes()
                    break
        elif saved_how == 2:
            saved = n.saved_shapes()
        return (
            "node_edges", ts, tid, n._id, name, n.sequence_nr, n.topological_nr, len(md), len(edges), device,
            tuple([sh if type(sh) is tuple else tuple(sh) for sh in saved]) if saved else (), n.source, tensor,
            tuple([(None if f is None else f._id, i) for f, i in edges]) if by_id else edges,
        ), leaf  # fmt: skip

    def _tensor(self, t: Any, tid: int, name: str | None) -> int:
        row = self._tensor_row(t, tid, name)
        if row is not None and not self._closed:
            rows = self._rows
            rows.append(row)
            if len(rows) >= self._spill_at:
                self._spill()
        return t._id

    def _tensor_row(self, t: Any, tid: int, name: str | None) -> tuple | None:
        """The tensor_created row of a leaf not announced yet (which counts as announced now)."""
        tensor_id = t._id
        if tensor_id in self._tensors:
            return None
        self._tensors.add(tensor_id)
        source = self._tensor_sources.pop(tensor_id, None)
        return (
            "tensor_created", _now() - self._t0, tid, tensor_id, t.name or name, tuple(t.shape), _dtype_name(t.dtype),
            str(t.device), source, _stats_row(t._data),
        )  # fmt: skip

    def _values(self, data: Any) -> Raw | None:
        if not self.values or data is None:
            return None
        a = _host(data)
        if a.size > VALUES_MAX:
            return None
        v = a.tolist()
        return Raw(v, codec._encode_any(v))

    # -- the probe ------------------------------------------------------------------------------
    # The steps a backward takes for every node (queue push/pop, node begin/end, buffer add,
    # dependency decrement) are written out in full and take no lock (see above): the
    # recorder's share of a recorded backward is mostly these few lines.


# node class -> (its name() if the class does not override Node.name, whether it has a leaf,
# whether its device is Node.device): what announcing a node would otherwise ask every node
_CLASS_INFO: dict[type, tuple[str | None, bool, bool, int]] = {}


def _class_info(cls: type) -> tuple[str | None, bool, bool, int]:
    from gradviz.autograd.graph import Node

    global _SavedVariable
    from gradviz.autograd.saved_variable import SavedVariable

    _SavedVariable = SavedVariable
    try:
        from gradviz.ops.core import OpNode
    except ImportError:  # pragma: no cover - the ops layer is always there with the engine
        OpNode = None  # noqa: N806
    name = cls.__name__ if getattr(cls, "name", None) is Node.name else None
    shapes = getattr(cls, "saved_shapes", None)
    saved_how = 0 if shapes is Node.saved_shapes else 1 if OpNode is not None and shapes is OpNode.saved_shapes else 2
    info = _CLASS_INFO[cls] = (
        name, hasattr(cls, "variable"), getattr(cls, "device", None) is Node.__dict__["device"], saved_how,
    )  # fmt: skip
    return info


_SavedVariable: Any = None  # gradviz.autograd.saved_variable.SavedVariable, once a node class is seen
_topo_of_row = itemgetter(6)  # a node_edges row's topological_nr


def _walk(node: Any, known: set[int]) -> list[Any]:
    """node and the nodes reachable from it that are not in ``known``, each after every node its
    edges point to, by a depth-first walk: for any graph (_node sorts by topological_nr)."""
    out: list[Any] = []
    done: set[int] = set()
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        n_id = n._id
        if n_id in known or n_id in done:
            continue
        if not expanded:
            stack.append((n, True))
            for f, _ in n.next_edges:
                if f is not None and f._id not in known and f._id not in done:
                    stack.append((f, False))
            continue
        done.add(n_id)
        out.append(n)
    return out
