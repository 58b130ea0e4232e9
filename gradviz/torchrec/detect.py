"""Which engine ``gradviz run SCRIPT`` records when not told: torch's when the script imports
torch and not gradviz. Reads the script's imports without running it (and without torch)."""

from __future__ import annotations

import ast
from pathlib import Path


def imports(path: str | Path) -> set[str]:
    """Top-level package names the script imports (anywhere in it); empty if it does not parse."""
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (SyntaxError, ValueError, OSError):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def engine_of(path: str | Path) -> str:
    names = imports(path)
    return "torch" if "torch" in names and "gradviz" not in names else "gradviz"
