"""A GraphModel as DOT source.

Everything that comes from a trace (node names, leaf names, source lines, error messages, the
program's argv) is untrusted: it only ever reaches DOT through ``html()`` (inside HTML-like
labels) or ``attr()`` (inside quoted attributes such as tooltips). DOT identifiers are ours
(``n12``, ``g3``, ``cluster_0``), never user text. Both escapers leave no backslash, quote,
angle bracket or raw control character in the output, so nothing can end a string or a label
early, start a DOT escape (``\\N``, ``\\G``), or break the SVG that graphviz writes.
"""

from __future__ import annotations

import re
from collections import Counter

from gradviz.render import styles
from gradviz.render.model import GEdge, GNode, GraphModel, Group, source_span, summarize
from gradviz.render.styles import Style
from gradviz.trace import sites
from gradviz.trace.events import MAX_SEQUENCE_NR

# C0/C1 control characters (tab and newline handled separately): invalid in XML even as entities.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
MAX_TEXT = 200  # longest piece of untrusted text drawn in a label; the tooltip has the rest


def clean(text: object, limit: int | None = None) -> str:
    """Untrusted text as a plain, printable string: valid UTF-8, no control characters."""
    s = str(text).encode("utf-8", "replace").decode("utf-8")  # lone surrogates become "?"
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    s = _CONTROL.sub("\N{REPLACEMENT CHARACTER}", s)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def _entities(s: str, backslash: str) -> str:
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
        .replace("\\", backslash)
        .replace("[", "&#91;")
        .replace("]", "&#93;")
        .replace("{", "&#123;")
        .replace("}", "&#125;")
        .replace("|", "&#124;")
    )


def html(text: object, limit: int | None = MAX_TEXT) -> str:
    """Text for inside an HTML-like label; a newline in the text becomes a line break."""
    # Graphviz applies its escString rules (\N = node name, \G = graph name) to HTML-label text
    # after decoding entities; an escaped backslash pair is its rule for one literal backslash.
    return "<BR/>".join(_entities(line, "&#92;&#92;") for line in clean(text, limit).split("\n"))


def attr(text: object, limit: int | None = 2000) -> str:
    """A quoted DOT attribute value (tooltips); newlines survive as XML character references."""
    # Tooltips go through escString twice in some graphviz versions, so no encoding of a
    # backslash survives the same everywhere: draw a look-alike (U+29F5) instead.
    return '"' + _entities(clean(text, limit), "\N{REVERSE SOLIDUS OPERATOR}").replace("\n", "&#10;") + '"'


def _style_attrs(s: Style, kind: Style | None = None) -> str:
    """Attributes for a box filled per ``s``; ``kind`` (if given) decides shape and outline."""
    k = kind or s
    return (
        f'shape={k.shape} style="{s.style}" fillcolor="{s.fill}" color="{s.border}" '
        f'fontcolor="{s.font}" penwidth={max(s.penwidth, k.penwidth)} peripheries={k.peripheries}'
    )


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    if x != x:
        return "nan"
    return f"{x:.4g}"


def _shape(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "None"
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _rows(rows: list[str]) -> str:
    body = "".join(f"<TR><TD>{r}</TD></TR>" for r in rows if r)
    return f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">{body}</TABLE>'


def _bold(text: str) -> str:
    return f"<B>{text}</B>" if text else ""  # graphviz rejects an empty <B></B>


def _small(text: str, colour: str | None = None) -> str:
    if not text:
        return ""  # graphviz rejects an empty <FONT></FONT>; _rows drops the empty row
    c = f' COLOR="{colour}"' if colour else ""
    return f'<FONT POINT-SIZE="9"{c}>{text}</FONT>'


def _node_style(n: GNode, step: int | None) -> Style:
    if step is not None and n.state is not None:
        # The fold knows errors; NaN in an output is only known here, from the gradients' stats.
        if n.error is not None and n.error_seq is not None and n.error_seq < step:
            return styles.MARKS["error"]
        return styles.STATES.get(n.state, styles.STATES["unreached"])
    if n.error is not None:
        return styles.MARKS["error"]
    if n.pruned:
        return styles.MARKS["pruned"]
    return styles.KINDS[n.kind]


def _seq_nr(n: GNode) -> str:
    """AccumulateGrad's sequence_nr is UINT64_MAX in torch (it sorts last): "none" says what that means."""
    seq = n.sequence_nr
    return "none" if isinstance(seq, int) and seq >= MAX_SEQUENCE_NR else str(seq)


def _where(n: GNode) -> str:
    """The forward line in a label: the file's name, the line and the op's column, then the op's
    text where the file is there to read (``m.py:13:25 F.relu(self.fc1(x))``): several ops made
    on one line are told apart. The tooltip has the path."""
    where = sites.where(n.source, n.columns, short=True)
    if not where:
        return ""
    frag = sites.fragment(n.source, n.columns, width=48)
    return f"{where}  {frag}" if frag else where


def _seen(model: GraphModel, seq: int | None) -> bool:
    """Whether an event had happened by the model's step (always, without a step)."""
    return seq is not None and (model.step is None or seq < model.step)


def node_stmt(model: GraphModel, n: GNode, *, compact: bool = False) -> str:
    """One node. compact: a one-line label, details in the tooltip (HTML-like labels cost
    graphviz more than the layout itself on pictures of thousands of boxes)."""
    kind = styles.KINDS[n.kind]
    style = _node_style(n, model.step)
    if compact:
        short = n.name if n.order is None or not _seen(model, n.begin_seq) else f"{n.name} #{n.order}"
        if n.state is not None and model.step is not None:
            short += f" ({n.state})"
        facts = [
            sites.where(n.source, n.columns) or "source unknown",
            f"{n.name} (node {n.id}, sequence_nr {_seq_nr(n)})",
            f"ran #{n.order} on {n.thread}" if n.order is not None else "",
            f"deps {n.deps}" if n.deps is not None else "",
            f"leaf {n.leaf.name or n.leaf.tensor} {_shape(n.leaf.shape)} {n.leaf.dtype}" if n.leaf else "",
            f"-> DDP {n.bucket}" if n.bucket else "",  # ddp
            f"saved {', '.join(_shape(x) for x in n.saved[:8])}" if n.saved else "",
            f"{n.state}: {n.state_detail or ''}" if n.state and model.step is not None else "",
            n.error or "",
        ]
        return (
            f'n{n.id} [id="node-{n.id}" {_style_attrs(style, kind)} '
            f"tooltip={attr(chr(10).join(f for f in facts if f))} label={attr(short, 60)}]"
        )
    rows = [_bold(html(n.name, 80)) or "(unnamed)"]
    # Numbers from a trace go through html() too: Trace(events) accepts events from anywhere.
    facts = [f"seq_nr {html(_seq_nr(n))}" if n.kind != "leaf" else ""]
    if n.order is not None and _seen(model, n.begin_seq):
        facts.append(f"ran #{n.order} on {html(n.thread, 40)}")
    elif n.order is not None:
        facts.append(f"will run #{n.order}")
    elif model.task is not None:
        facts.append("pruned" if n.pruned else "did not run")
    if n.deps is not None:
        facts.append(f"deps {html(n.deps)}")
    rows.append(_small(" · ".join(f for f in facts if f)))
    rows.append(_small(html(_where(n), 80)))
    if n.leaf is not None:
        lf = n.leaf
        who = html(lf.name, 60) if lf.name else f"tensor {html(lf.tensor)}"
        rows.append(_small(f"{who} {html(_shape(lf.shape))} {html(lf.dtype, 20)}"))
        if lf.grad_norm is not None and _seen(model, lf.grad_seq):
            colour = styles.MARKS["error"].border if lf.grad_bad else None
            rows.append(_small(f"grad norm {_fmt(lf.grad_norm)}", colour))
    if n.bucket is not None:  # ddp
        rows.append(_small(html(f"-> DDP {n.bucket}")))
    if n.saved:
        shown = ", ".join(_shape(s) for s in n.saved[:4]) + (" …" if len(n.saved) > 4 else "")
        released = " (released)" if n.released and _seen(model, n.release_seq) else ""
        rows.append(_small(f"saved {html(shown)}{released}"))
    if n.state is not None and model.step is not None:
        detail = f": {html(n.state_detail, 60)}" if n.state_detail else ""
        rows.append(_small(f"{_bold(html(n.state))}{detail}"))
    hooks = Counter(k for k, seq in n.hooks if _seen(model, seq))
    if hooks:
        rows.append(_small("hooks: " + html(", ".join(f"{k} ×{c}" if c > 1 else k for k, c in hooks.items()))))
    for input_nr, index, seq in n.captured:
        if _seen(model, seq):
            rows.append(_small(html(f"grad() output {index} captured from input {input_nr}")))
    if n.nested:
        tasks = ", ".join(str(t) for t in n.nested)
        rows.append(_small(html(f"ran task {tasks} inside (reentrant)")))
    if n.error is not None and (model.step is None or _seen(model, n.error_seq)):
        rows.append(_small(html(n.error, 80), styles.MARKS["error"].font))
    tip = [sites.where(n.source, n.columns) or "source unknown", f"{n.name} (node {n.id}, sequence_nr {_seq_nr(n)})"]
    if n.error:
        tip.append(n.error)
    # The fill may say the state; the shape and outline always say the kind.
    return (
        f'n{n.id} [id="node-{n.id}" {_style_attrs(style, kind)} '
        f"tooltip={attr(chr(10).join(tip))} label=<{_rows(rows)}>]"
    )


def _group_state(model: GraphModel, g: Group) -> tuple[Style, Counter[str]]:
    members = [model.nodes[m] for m in g.members]
    if model.step is not None:
        counts = Counter(n.state or "unreached" for n in members)
        top = next((s for s in styles.STATE_PRECEDENCE if counts.get(s)), "unreached")
        return styles.STATES[top], counts
    if any(n.error for n in members):
        return styles.MARKS["error"], Counter()
    if all(n.pruned for n in members):
        return styles.MARKS["pruned"], Counter()
    return styles.KINDS["group"], Counter()


def group_stmt(model: GraphModel, g: Group, *, compact: bool = False) -> str:
    style, counts = _group_state(model, g)
    size = len(g.members)
    if compact:
        tip = [source_span(model, g.members) or "source unknown", summarize(model, g.members, top=12)]
        if counts:
            tip.append(" · ".join(f"{s} {c}" for s, c in counts.items()))
        return (
            f'g{g.id} [id="group-{g.id}" {_style_attrs(style, styles.KINDS["group"])} '
            f"tooltip={attr(chr(10).join(tip))} label={attr(f'×{size}: ' + summarize(model, g.members, 2), 60)}]"
        )
    if g.kind == "chain":
        head = f"×{size} nodes: a linear chain"
    elif g.kind == "repeat":
        head = f"×{g.blocks} more blocks like the one above ({size} nodes)"
    elif g.kind in ("line", "function"):
        head = f"×{size} nodes from {html(g.key, 80)}"
    else:
        head = f"×{size} nodes: a segment of the graph"
    names = [model.nodes[m].name for m in g.members]
    per_block = Counter(names)
    if g.kind == "chain" and len(names) <= 6:  # a short chain reads best in the order it runs
        what = " → ".join(names)
    elif g.kind == "repeat" and g.blocks and all(c % g.blocks == 0 for c in per_block.values()):
        parts = [f"{n} ×{c // g.blocks}" if c > g.blocks else n for n, c in per_block.most_common(8)]
        what = "each block: " + " · ".join(parts)
    else:
        what = summarize(model, g.members)
    rows = [f"<B>{head}</B>", _small(html(what))]
    span = source_span(model, g.members)
    if span:
        rows.append(_small(html(span)))
    ran = [model.nodes[m].order for m in g.members if model.nodes[m].order is not None]
    if ran:
        rows.append(_small(f"ran #{min(ran)}–#{max(ran)}" if len(ran) > 1 else f"ran #{ran[0]}"))
    if counts:
        order = [s for s in styles.STATE_PRECEDENCE if counts.get(s)]
        rows.append(_small(html(" · ".join(f"{s} {counts[s]}" for s in order))))
    errors = [model.nodes[m].error for m in g.members if model.nodes[m].error]
    if errors:
        rows.append(_small(html(f"{len(errors)} errored: {errors[0]}", 80), styles.MARKS["error"].font))
    tip = [span or "source unknown", summarize(model, g.members, top=12), f"{g.kind} box of {size} nodes"]
    return (
        f'g{g.id} [id="group-{g.id}" {_style_attrs(style, styles.KINDS["group"])} '
        f"tooltip={attr(chr(10).join(tip))} label=<{_rows(rows)}>]"
    )


def _edge_label(model: GraphModel, e: GEdge) -> str:
    # The slot only tells something where the target has a choice of slots.
    dst = model.nodes.get(e.dst)
    parts = [f"in {html(e.input_nr)}"] if dst is None or dst.num_inputs != 1 or e.input_nr != 0 else []
    if model.grads and e.grad is not None and _seen(model, e.grad.seq):
        g = e.grad
        times = f" (×{g.count})" if g.count > 1 else ""
        parts.append(f"{html(_shape(g.shape))} ‖g‖ {_fmt(g.norm)}{times}")
    return "<BR/>".join(parts)


def edge_stmts(model: GraphModel, *, compact: bool = False) -> list[str]:
    """Edges between boxes. Edges inside a collapsed box are not drawn; edges between two boxes
    of which one is collapsed merge into one ("×k edges"); parallel edges between two plain
    nodes (x * x feeds one leaf twice) are each drawn, since each is a slot of next_edges."""
    bundles: dict[tuple[str, str, int], list[GEdge]] = {}
    for e in model.edges:
        a, b = model.unit(e.src), model.unit(e.dst)
        if a == b:
            continue
        slot = e.slot if a[0] == "n" and b[0] == "n" else -1
        bundles.setdefault((f"{a[0]}{a[1]}", f"{b[0]}{b[1]}", slot), []).append(e)
    out = []
    seen: set[str] = set()
    for (a, b, _), es in bundles.items():
        e = es[0]
        dst_pruned = all(model.nodes[x.dst].pruned for x in es)
        bad = any(x.grad is not None and x.grad.bad for x in es)
        st = styles.EDGE_GRAD_NAN if bad else styles.EDGE_PRUNED if dst_pruned else styles.EDGE
        label = _edge_label(model, e) if len(es) == 1 else f"×{len(es)} edges"
        dashed = "dashed" if st is styles.EDGE_PRUNED else "solid"
        # Edge labels become extra nodes in dot's layout: on big pictures they go to tooltips.
        text = f'tooltip="{label}"' if compact and len(es) > 1 else f"label=<{_small(label)}>" if label else ""
        if compact and len(es) == 1:
            text = f"tooltip={attr(f'input_nr {e.input_nr}')}"
        eid = f"edge-{a}-{b}"
        if eid in seen:
            eid = f"{eid}-slot{e.slot}"
        seen.add(eid)
        out.append(f'{a} -> {b} [id="{eid}" color="{st.border}" style="{dashed}" penwidth={st.penwidth} {text}]')
    return out


def legend(model: GraphModel) -> str:
    """Rows explaining every style this picture uses (generated from ``styles``)."""
    used: list[Style] = []
    kinds = {n.kind for n in model.nodes.values()}
    used += [s for k, s in styles.KINDS.items() if k in kinds or (k == "group" and model.groups)]
    if model.step is not None:
        states = {n.state for n in model.nodes.values()}
        used += [s for k, s in styles.STATES.items() if k in states]
    else:
        if any(n.error for n in model.nodes.values()):
            used.append(styles.MARKS["error"])
        if any(n.pruned for n in model.nodes.values()):
            used.append(styles.MARKS["pruned"])
    rows = []
    for s in used:
        rows.append(
            f'<TR><TD BGCOLOR="{s.fill}" BORDER="1" COLOR="{s.border}" WIDTH="18"> </TD>'
            # Key and meaning in cells of their own: a space between them inside one cell is lost
            # in SVG (graphviz places each run of text itself; renderers collapse the space).
            f'<TD ALIGN="LEFT">{_small(f"<B>{s.key}</B>")}</TD><TD ALIGN="LEFT">{_small(html(s.meaning))}</TD></TR>'
        )
    rows.append(f'<TR><TD>→</TD><TD ALIGN="LEFT" COLSPAN="2">{_small(html(styles.EDGE.meaning))}</TD></TR>')
    return f'<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="1">{"".join(rows)}</TABLE>'


COMPACT_ABOVE = 600  # boxes past which labels go compact (see node_stmt)


def to_dot(model: GraphModel, *, layout: str = "dot", compact: bool | None = None) -> str:
    """DOT source for the model (``layout`` tunes attributes for dot or sfdp)."""
    if compact is None:
        compact = model.drawn() > COMPACT_ABOVE or layout == "fixed"
    title = [_bold(html(model.title, 160))]
    if compact:
        title.append(_small("compact labels: details and input_nr are in the tooltips"))
    if model.step is not None:
        title.append(_small(html(f"state {model.step_label or f'after {model.step} events'}")))
    for note in model.notes:
        title.append(_small(html(note)))
    label = (
        '<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="2">'
        + "".join(f'<TR><TD ALIGN="LEFT">{t}</TD></TR>' for t in title)
        + f'<TR><TD ALIGN="LEFT">{legend(model)}</TD></TR></TABLE>'
    )
    lines = [
        "digraph gradviz {",
        f'  graph [label=<{label}> labelloc=t labeljust=l fontname="Helvetica" rankdir=TB]',
        '  node [fontname="Helvetica" fontsize=11 margin="0.08,0.04"]',
        '  edge [fontname="Helvetica" fontsize=9 arrowsize=0.7]',
    ]
    if layout == "sfdp":
        lines.append("  graph [overlap=prism splines=false outputorder=edgesfirst]")
    elif layout == "fixed":  # positions computed in gradviz.render.layout; neato -n2 only draws
        lines.append("  graph [splines=false outputorder=edgesfirst]")
    elif layout == "dot-fast":
        # Fewer crossing-minimisation and network-simplex iterations: dot's cost on big graphs.
        lines.append("  graph [splines=line nslimit=1 nslimit1=1 mclimit=0.1 searchsize=5 remincross=false]")
    stmts: list[tuple[str, str]] = []  # (device, statement)
    for nid, n in model.nodes.items():
        if nid not in model.group_of:
            stmts.append((n.device, node_stmt(model, n, compact=compact)))
    for g in model.groups.values():
        dev = Counter(model.nodes[m].device for m in g.members).most_common(1)[0][0]
        stmts.append((dev, group_stmt(model, g, compact=compact)))
    edges = edge_stmts(model, compact=compact)
    if layout == "fixed":
        stmts = _place(stmts, edges)
        if len(model.devices) > 1:  # neato draws no clusters: the outline says the device
            colours = {d: styles.DEVICE_COLOURS[i % len(styles.DEVICE_COLOURS)] for i, d in enumerate(model.devices)}
            stmts = [(d, f'{st[:-1]} color="{colours[d]}" penwidth=2.5]') for d, st in stmts]
            names = styles.DEVICE_COLOUR_NAMES
            key = ", ".join(f"{d} {names[i % len(names)]}" for i, d in enumerate(model.devices))
            lines[1] = lines[1].replace(
                "</TABLE>> labelloc",
                f'<TR><TD ALIGN="LEFT">{_small("outline = device: " + html(key))}</TD></TR></TABLE>> labelloc',
                1,
            )
    if len(model.devices) > 1 and layout != "fixed":  # neato draws no clusters
        for i, dev in enumerate(model.devices):
            colour = styles.DEVICE_COLOURS[i % len(styles.DEVICE_COLOURS)]
            lines.append(f"  subgraph cluster_{i} {{")
            lines.append(
                f'    graph [id="device-{i}" label=<{_bold(html(dev, 60)) or "(no device)"}> color="{colour}" '
                f'fontcolor="{colour}" style=rounded tooltip={attr(styles.DEVICE_MEANING)}]'
            )
            lines += [f"    {s}" for d, s in stmts if d == dev]
            lines.append("  }")
    else:
        lines += [f"  {s}" for _, s in stmts]
    lines += [f"  {s}" for s in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


_ID = re.compile(r"^(\w+) \[")
_EDGE = re.compile(r"^(\w+) -> (\w+) ")
_LABEL = re.compile(r' label=(?:"([^"]*)"|<)')


def _place(stmts: list[tuple[str, str]], edges: list[str]) -> list[tuple[str, str]]:
    """Add fixed positions (``pos="x,y!"``) to node statements for ``neato -n2``."""
    from gradviz.render.layout import CHAR_W, layered

    units, widths = [], {}
    for _, st in stmts:
        m = _ID.match(st)
        if m is None:
            continue
        units.append(m.group(1))
        lab = _LABEL.search(st)
        text = lab.group(1) if lab and lab.group(1) is not None else "x" * 24
        widths[m.group(1)] = len(text) * CHAR_W + 24
    pairs = [(m.group(1), m.group(2)) for e in edges if (m := _EDGE.match(e))]
    pos = layered(units, pairs, widths)
    out = []
    for dev, st in stmts:
        m = _ID.match(st)
        if m is not None and m.group(1) in pos:
            x, y = pos[m.group(1)]
            st = f'{st[:-1]} pos="{x:.1f},{y:.1f}!"]'
        out.append((dev, st))
    return out
