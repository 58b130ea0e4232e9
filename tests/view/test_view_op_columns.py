"""The browser page's node table names the op that made each node: line, column and text
(issue 35 item 11)."""

from __future__ import annotations

import _op_columns as oc

from gradviz.view.page import _node_table


def test_the_browser_page_names_the_op(tmp_path):
    trace = oc.record("torch", tmp_path)
    relu = oc.node(trace, "ReluBackward0")
    table = _node_table(trace.nodes)
    source = table["sources"][table["source"][table["id"].index(relu.id)]]
    assert source.endswith(f"ops_line.py:{oc.FORWARD_LINE}:29 (`F.relu(self.fc1(x))`)"), source
