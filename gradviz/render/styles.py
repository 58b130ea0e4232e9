"""Every colour and shape a rendered graph uses, each with what it means.

This is the one place to change the look: ``gradviz.render.dot`` reads the styles from here,
the legend drawn in each picture is generated from here, and so is the colour key in
``gradviz render --help``. A style that is not explained here is not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Style:
    """How one kind of box, or one state, is drawn, and what it means to the reader."""

    key: str
    meaning: str
    looks: str = ""  # the style in words, for --help (a terminal shows no colours)
    fill: str = "#ffffff"
    border: str = "#444444"
    font: str = "#000000"
    shape: str = "box"
    style: str = "filled,rounded"
    penwidth: float = 1.0
    peripheries: int = 1


# What a node is. Without --step, the fill says the kind; with --step, the fill says the state
# and the shape still says the kind.
KINDS: dict[str, Style] = {
    s.key: s
    for s in (
        Style("op", "a backward node (torch's Function name)", looks="grey box", fill="#eef2f7"),
        Style(
            "leaf",
            "AccumulateGrad: writes .grad of a leaf tensor",
            looks="blue ellipse",
            fill="#dbeafe",
            shape="ellipse",
            style="filled",
        ),
        Style(
            "root",
            "a root of the graph task (where backward started)",
            looks="yellow box, double border",
            fill="#fde68a",
            penwidth=2.5,
            peripheries=2,
        ),
        Style(
            "graph_root",
            "GraphRoot: the engine's node for several roots or a given gradient",
            looks="yellow octagon",
            fill="#fde68a",
            shape="octagon",
            style="filled",
            penwidth=2.0,
        ),
        Style(
            "group",
            "several nodes drawn as one box (collapsed; the count says how many)",
            looks="violet 3-D box",
            fill="#ede9fe",
            border="#6d28d9",
            shape="box3d",
            style="filled",
        ),
    )
}

# Marks that override the kind's colours, in the static picture and at a step.
MARKS: dict[str, Style] = {
    s.key: s
    for s in (
        Style(
            "pruned",
            "not needed (pruned by exec_info): will not run",
            looks="faded, dashed border",
            fill="#f5f5f5",
            border="#bbbbbb",
            font="#9ca3af",
            style="filled,dashed,rounded",
        ),
        Style(
            "error",
            "raised an error, or produced NaN/Inf",
            looks="red, thick red border",
            fill="#fecaca",
            border="#dc2626",
            font="#7f1d1d",
            penwidth=2.5,
        ),
    )
}

# Node states after the first N events (``--step N``); the vocabulary of gradviz.replay.state.
STATES: dict[str, Style] = {
    s.key: s
    for s in (
        Style(
            "unreached",
            "not reached yet: no gradient has arrived",
            looks="white, grey text",
            fill="#ffffff",
            border="#9ca3af",
            font="#6b7280",
        ),
        Style(
            "pruned",
            "pruned by exec_info: will not run",
            looks="faded, dashed border",
            fill="#f5f5f5",
            border="#bbbbbb",
            font="#9ca3af",
            style="filled,dashed,rounded",
        ),
        Style(
            "arriving",
            "a gradient is arriving: InputBuffer being filled, not parked or queued yet",
            looks="light orange",
            fill="#ffedd5",
            border="#ea580c",
        ),
        Style(
            "parked",
            "parked in not_ready: k of n InputBuffer slots filled",
            looks="orange",
            fill="#fed7aa",
            border="#ea580c",
        ),
        Style(
            "ready",
            "all gradients in: being pushed to a ready queue",
            looks="light yellow",
            fill="#fefce8",
            border="#ca8a04",
        ),
        Style(
            "queued",
            "in a ready queue, waiting for its thread",
            looks="yellow",
            fill="#fef08a",
            border="#ca8a04",
        ),
        Style(
            "running",
            "running now (on the thread shown)",
            looks="green, thick border",
            fill="#86efac",
            border="#15803d",
            penwidth=3.0,
        ),
        Style("done", "ran; saved tensors still held", looks="blue", fill="#bfdbfe", border="#1d4ed8"),
        Style("released", "ran and released its saved tensors", looks="grey", fill="#e5e7eb", border="#6b7280"),
        Style(
            "error",
            "raised an error",
            looks="red",
            fill="#fecaca",
            border="#dc2626",
            font="#7f1d1d",
            penwidth=2.5,
        ),
    )
}

# The order in which a collapsed box takes the colour of its members' states: the most
# "active" member wins, so a box with one running node inside is drawn running.
STATE_PRECEDENCE: tuple[str, ...] = (
    "error",
    "running",
    "queued",
    "ready",
    "parked",
    "arriving",
    "done",
    "released",
    "unreached",
    "pruned",
)

# Edges: gradient flows along them from a node to the nodes of its next_edges.
EDGE = Style(
    "edge", "gradient flow: label = input_nr (InputBuffer slot of a target with several inputs)", border="#374151"
)
EDGE_PRUNED = Style("edge_pruned", "edge into a pruned node", border="#d1d5db", style="dashed")
EDGE_GRAD_NAN = Style("edge_nan", "the gradient on this edge had NaN/Inf", border="#dc2626", penwidth=2.0)

# Device clusters (one colour per device, in order of first appearance) when nodes live on
# several devices.
DEVICE_COLOURS: tuple[str, ...] = ("#2563eb", "#16a34a", "#c026d3", "#ea580c", "#0891b2", "#854d0e")
DEVICE_COLOUR_NAMES: tuple[str, ...] = ("blue", "green", "magenta", "orange", "cyan", "brown")
DEVICE_MEANING = "a device: nodes inside ran (or would run) on it"


def help_text() -> str:
    """The colour key for ``--help`` (click keeps lines after a \\b marker as they are)."""
    lines = ["\b", "Shapes (what a node is):"]
    lines += [f"  {s.looks:<26} {s.key:<10} {s.meaning}" for s in KINDS.values()]
    lines += ["Marks (static picture):"]
    lines += [f"  {s.looks:<26} {s.key:<10} {s.meaning}" for s in MARKS.values()]
    lines += ["Fill at --step N (the state after the first N events):"]
    lines += [f"  {s.looks:<26} {s.key:<10} {s.meaning}" for s in STATES.values()]
    lines += ["Edges:", f"  {'arrow':<26} {'':<10} {EDGE.meaning}"]
    lines += [f"  {'dashed grey':<26} {'':<10} {EDGE_PRUNED.meaning}"]
    lines += [f"  {'red':<26} {'':<10} {EDGE_GRAD_NAN.meaning}"]
    lines += ["Clusters:", f"  {'coloured frame':<26} {'':<10} {DEVICE_MEANING}"]
    return "\n".join(lines)
