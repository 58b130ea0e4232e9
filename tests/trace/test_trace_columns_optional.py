"""A trace written before node_created and forward_op had ``columns`` (issue 35 item 11) reads as
before, its columns None: the field is additive, no format bump."""

from __future__ import annotations

import json

import gradviz
from gradviz.trace import events as ev


def test_a_trace_without_the_columns_field_reads_with_columns_none(tmp_path):
    path = tmp_path / "new.trace.json"
    with gradviz.trace(str(path)):
        x = gradviz.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sin().sum().backward()
    new = gradviz.load(str(path))
    assert all(n.columns is not None for n in new.nodes.values())
    head, *lines = path.read_text().splitlines()
    header = json.loads(head + "]}")
    del header["events"]  # the header line ends by opening the events' list
    cut = {}  # layout name -> index of "columns" in its lines
    for kind in ("node_edges", "node_created", "forward_op"):
        names = header["fields"][kind]
        cut[kind] = names.index("columns")
        names.remove("columns")
    old_lines = []
    for line in lines:
        body = line.rstrip(",")
        if body.startswith("[") and json.loads(body)[0] in cut:
            a = json.loads(body)
            del a[cut[a[0]]]
            line = json.dumps(a) + line[len(body):]
        old_lines.append(line)
    old_path = tmp_path / "old.trace.json"
    old_path.write_text(json.dumps(header)[:-1] + ',"events":[\n' + "\n".join(old_lines))
    old = gradviz.load(str(old_path))
    assert [(n.name, n.source, n.next_edges) for n in old.nodes.values()] == [
        (n.name, n.source, n.next_edges) for n in new.nodes.values()]
    assert all(n.columns is None for n in old.nodes.values())
    assert all(e.columns is None for e in old.of_kind(ev.ForwardOp))
    assert len(old.events) == len(new.events)
    lazy = gradviz.load(str(old_path), lazy=True)
    assert [n.name for n in lazy.nodes.values()] == [n.name for n in new.nodes.values()]
    assert all(n.columns is None for n in lazy.nodes.values())
