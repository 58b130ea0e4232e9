"""Headless Chromium for the page tests: the DOM after the page's script ran, a screenshot, and a
tiny PNG reader (zlib and the five scanline filters) to tell a blank screenshot from a page."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
SKIP_REASON = "Debian's chromium is not installed (bash scripts/setup.sh --test installs it with apt)"


def _run(args: list[str], profile: Path, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    cmd = [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)


def dump_dom(url: str, profile: Path, budget_ms: int = 10000) -> str:
    """The page's DOM once its script ran (virtual time lets timers and promises settle)."""
    proc = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url], profile)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode("utf-8")


def screenshot(url: str, out: Path, profile: Path, size: str = "1400,1000", budget_ms: int = 10000) -> Path:
    proc = _run([f"--virtual-time-budget={budget_ms}", f"--window-size={size}", f"--screenshot={out}", url], profile)
    assert proc.returncode == 0 and out.exists(), proc.stderr.decode(errors="replace")[-2000:]
    return out


class PageDom(HTMLParser):
    """What the tests read from a dumped page: node boxes, the current step and task, and
    whether the data was loaded. Script contents are text, not elements: the SVGs inside the
    page's JSON are not counted."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.nodes: dict[int, str] = {}  # data-node -> data-state
        self.groups: dict[int, str] = {}
        self.current: dict[str, str] = {}
        self.body: dict[str, str] = {}
        self.ids: dict[str, dict[str, str]] = {}
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "data-node" in a and "data-state" in a:
            self.nodes[int(a["data-node"])] = a["data-state"]
        if "data-group" in a and "data-state" in a:
            self.groups[int(a["data-group"])] = a["data-state"]
        if a.get("id") == "current":
            self.current = a
        if tag == "body":
            self.body = a
        if "id" in a:
            self.ids[a["id"]] = a


def png_pixels(path: Path) -> tuple[int, int, set[bytes]]:
    """(width, height, the distinct pixel values) of an 8-bit RGB or RGBA PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    height = bpp = 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"unsupported PNG (depth {depth}, colour type {colour})"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    seen: set[bytes] = set()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:  # every fourth row is plenty to tell a page from a blank
            seen.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp))
        prev = line
    return width, height, seen
