"""Text that wraps between phrases, never inside one: "MulBackward0 (node 3)" or "priority (0, 6)"
stays whole on a line when a table cell or an 80-column terminal is too narrow for the lot.

rich wraps at any space, so a narrow column splits "passing a gradient to ToCopyBackward0 (node
11)" after "(node": ``Phrases`` is a renderable that rich asks for its width (a phrase is the
least it takes) and that lays its phrases out greedily in the width it gets. A phrase longer
than the line is the only thing rich may still break.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text


class Phrases:
    """``phrases`` joined by ``sep``, wrapped between them, continuation lines indented by
    ``indent``, in ``style``."""

    def __init__(self, phrases: Iterable[str], *, sep: str = " ", indent: str = "", style: str = "") -> None:
        self.phrases = [p for p in phrases if p]
        self.sep = sep
        self.indent = indent
        self.style = style

    @classmethod
    def of(cls, text: str, keep: Iterable[str] = (), **kw: str) -> Phrases:
        """``text`` wrapped between its phrases (``phrases_of``)."""
        return cls(phrases_of(text, keep), **kw)

    @property
    def plain(self) -> str:
        return self.sep.join(self.phrases)

    def __str__(self) -> str:
        return self.plain

    def lines(self, width: int) -> list[str]:
        out: list[str] = []
        cur = ""
        for p in self.phrases:
            if not cur:
                cur = (self.indent if out else "") + p
            elif cell_len(cur) + cell_len(self.sep) + cell_len(p) <= width:
                cur += self.sep + p
            else:
                out.append(cur.rstrip())
                cur = self.indent + p
        if cur or not out:
            out.append(cur.rstrip())
        return out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((cell_len(p) for p in self.phrases), default=0)
        return Measurement(min(widest + cell_len(self.indent), options.max_width),
                           min(cell_len(self.plain), options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield Text("\n".join(self.lines(options.max_width)), style=self.style)


def phrases_of(text: str, keep: Iterable[str] = ()) -> list[str]:
    """``text`` cut into phrases at spaces, but never inside ``keep`` (node labels), inside
    parentheses, or before a number or a parenthesised group: "task 1," and "MulBackward0
    (seq 3)" and "priority (0, 6)" each stay whole."""
    marks: dict[str, str] = {}
    for i, k in enumerate(sorted(set(keep), key=len, reverse=True)):
        if k and k in text:
            mark = f"\x00{i}\x00"
            marks[mark] = k
            text = text.replace(k, mark)
    out: list[str] = []
    depth = 0
    lead = text[: len(text) - len(text.lstrip(" "))]  # an indent stays with the first phrase
    for word in text.split(" "):
        if not word:
            continue
        prev = out[-1] if out else ""
        glue = bool(out) and (
            depth > 0 or word[0] in "([" or prev.isdigit() or prev.endswith(("#", "..."))
            or (word[0].isdigit() and not prev.endswith((",", ";", ":"))) or word in ("ran", "more")
        )
        if glue:
            out[-1] += " " + word
        else:
            out.append(word)
        depth = max(0, depth + word.count("(") - word.count(")"))
    for mark, k in marks.items():
        out = [p.replace(mark, k) for p in out]
    if out:
        out[0] = lead + out[0]
    return out


def split_list(head: str, items: Iterable[str], *, sep: str = ", ") -> list[str]:
    """``head`` then each item, every item but the last with ``sep`` stuck to it (a comma ends
    a phrase): phrases for ``Phrases(..., sep=" ")``."""
    items = list(items)
    return [head, *(it + sep.rstrip() for it in items[:-1]), *items[-1:]]
