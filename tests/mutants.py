"""Traces with one integer changed, and every command run on each: the harness of issue 18's
items 2 and 4 (tests/trace/test_trace_validate.py runs a sample, benchmarks/bench_mutants.py all).

``python tests/mutants.py OUT.json [--all] [--limit N] [--seed S]`` runs, in this process, every
command on each mutant and writes the failures (a traceback, a multi-line error, a hang) to
OUT.json. The caller starts it in a subprocess with a memory cap (RLIMIT_AS): a mutant that
makes a command allocate by a crafted number ends that process with MemoryError, which is a
failure too.

A mutant changes one integer (an event's own field, or one inside a tuple field: roots, counts,
priority, shape...) to -1, 0, 10**9, 2**62, 10**400 (beyond a float and 64 bits) or an id that
nothing announced (UNKNOWN_ID); or one string (a name, a message, a source line, a kind of
queue entry...) to rich markup, a lone surrogate, a control sequence or an emoji code (issue 33
G8/G9); or one float of a gradient's statistics to an integer too large for a float (G10).

Every trace-reading command runs on each: info (tables and --json), render (and --step),
replay (the timeline and --step), export, and diff with the mutant first and with it second.
"""

from __future__ import annotations

import dataclasses
import json
import random
import signal
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

VALUES = (-1, 0, 10**9, 2**62, 10**400)
STRINGS = ("[/]", "cannot read [/data/train.csv]", "[bold red]x[/", "bad \udcff name", "\x1b]0;title\x07",
           ":warning: [link=file:///etc]x[/link]")
FLOATS = (10**400, -(10**400))
UNKNOWN_ID = 4242
PER_RUN_S = 20  # a command slower than this on a 60-event trace hangs
MEMORY_CAP = 2 << 30  # bytes of address space for the process that runs the commands


def base_traces() -> dict[str, list]:
    """Small traces that together hold every event kind."""
    import trace_builders as tb

    return {f.__name__: f().events for f in (tb.diamond, tb.reentrant, tb.pruned, tb.failing, tb.two_devices)}


def _int_paths(v: Any, path: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    if type(v) is int:
        yield path
    elif type(v) is tuple:
        for i, x in enumerate(v):
            yield from _int_paths(x, (*path, i))


def _replace_at(v: Any, path: tuple[int, ...], new: int) -> Any:
    if not path:
        return new
    i = path[0]
    return (*v[:i], _replace_at(v[i], path[1:], new), *v[i + 1 :])


def _str_paths(v: Any, path: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    if type(v) is str:
        yield path
    elif type(v) is tuple:
        for i, x in enumerate(v):
            yield from _str_paths(x, (*path, i))


def str_sites(e: Any) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(field, path inside it) of each string of event ``e``."""
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if not dataclasses.is_dataclass(v):
            for p in _str_paths(v):
                yield f.name, p


def float_sites(e: Any) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Each float of a gradient's statistics (``stats.norm``, ``after.max``...) of event ``e``."""
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if dataclasses.is_dataclass(v):
            for g in dataclasses.fields(v):
                if type(getattr(v, g.name)) is float:
                    yield f"{f.name}.{g.name}", ()


def int_sites(e: Any) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(field, path inside it) of each integer of event ``e`` (seq aside: the file numbers events)."""
    for f in dataclasses.fields(e):
        if f.name == "seq":
            continue
        v = getattr(e, f.name)
        if dataclasses.is_dataclass(v):  # stats
            for g in dataclasses.fields(v):
                if type(getattr(v, g.name)) is int:
                    yield f"{f.name}.{g.name}", ()
            continue
        for p in _int_paths(v):
            yield f.name, p


def mutate(e: Any, field: str, path: tuple[int, ...], value: Any) -> Any:
    if "." in field:
        outer, inner = field.split(".")
        return dataclasses.replace(e, **{outer: dataclasses.replace(getattr(e, outer), **{inner: value})})
    return dataclasses.replace(e, **{field: _replace_at(getattr(e, field), path, value)})


def _shown(value: Any) -> str:
    if type(value) is int and abs(value) > 2**64:
        return "-10**400" if value < 0 else "10**400"
    return ascii(value) if type(value) is str else str(value)


def all_mutants() -> Iterator[tuple[str, list]]:
    """(description, events) for every integer of every event of every base trace x VALUES,
    every string x STRINGS and every float of a statistic x FLOATS."""
    for name, events in base_traces().items():
        for i, e in enumerate(events):
            sites = [(s, (*VALUES, UNKNOWN_ID)) for s in int_sites(e)]
            sites += [(s, STRINGS) for s in str_sites(e)] + [(s, FLOATS) for s in float_sites(e)]
            for (field, path), values in sites:
                for value in values:
                    evs = list(events)
                    evs[i] = mutate(e, field, path, value)
                    yield f"{name} event {i} ({e.kind}) {field}{list(path) or ''} = {_shown(value)}", evs


def sample_mutants() -> Iterator[tuple[str, list]]:
    """One event of each kind and each integer site, in each base trace, x every value: every kind
    and field covered, for a fraction of the runs."""
    seen: set[tuple[str, str, tuple[int, ...]]] = set()
    for desc, evs in all_mutants():
        kind_field = desc.split(" (", 1)[1].split(" = ")[0]
        value = desc.rsplit(" = ", 1)[1]
        key = (kind_field, value, ())
        if key in seen:
            continue
        seen.add(key)
        yield desc, evs


def commands(path: str, out: str, n_events: int, good: str) -> list[list[str]]:
    """Every trace-reading command on ``path``; ``good``: the unchanged trace, for diff."""
    step = str(max(1, n_events // 2))
    return [
        ["info", path],
        ["info", path, "--json"],
        ["diff", path, good],
        ["diff", good, path],
        ["render", path, "--format", "dot", "-o", f"{out}.dot"],
        ["render", path, "--format", "dot", "-o", f"{out}.step.dot", "--step", step],
        ["replay", path, "--width", "100"],
        ["replay", path, "--step", step, "--width", "100"],
        ["export", path, "-o", f"{out}.perfetto.json"],
    ]


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang()


def run_one(path: str, args: list[str]) -> str | None:
    """None if the command ended as a command should (exit 0, or one ``Error:`` line); else why."""
    from click.testing import CliRunner

    from gradviz.cli import main

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PER_RUN_S)
    try:
        r = CliRunner().invoke(main, args, catch_exceptions=True)
    except _Hang:
        return f"hang (over {PER_RUN_S} s)"
    finally:
        signal.alarm(0)
    if isinstance(r.exception, _Hang):
        return f"hang (over {PER_RUN_S} s)"
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        return "traceback: " + "".join(traceback.format_exception(*r.exc_info)[-3:])  # type: ignore[misc]
    if r.exit_code != 0 and not (args[0] == "diff" and r.exit_code == 1 and not r.stderr):  # diff: 1 = diverged
        lines = r.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("Error: "):
            return f"exit {r.exit_code}, stderr not one Error: line: {r.stderr[:500]!r}"
    return None


def run_mutants(mutants: Iterator[tuple[str, list]], workdir: Path, limit: int | None = None) -> dict[str, Any]:
    """Every command on each mutant; a mutant the loader refuses runs only ``info`` (every command
    loads the same way: _common.load_trace)."""
    import warnings

    from gradviz.trace import TraceError, TraceWarning, load
    from gradviz.trace.file import save

    failures: list[str] = []
    n = runs = refused = 0
    good = {}
    for name, events in base_traces().items():
        good[name] = str(workdir / f"{name}.json")
        save(events, good[name])
    for desc, evs in mutants:
        if limit is not None and n >= limit:
            break
        n += 1
        path = str(workdir / "m.json")
        save(evs, path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TraceWarning)
                load(path)
            loads = True
        except TraceError:
            loads = False
            refused += 1
        cmds = commands(path, str(workdir / "out"), len(evs), good[desc.split(" ", 1)[0]])
        for args in cmds if loads else cmds[:4]:  # refused: as every command loads, info and diff say
            runs += 1
            why = run_one(path, args)
            if why is not None:
                shown = ["MUTANT" if a == path else "BASE" if a in good.values() else a for a in args]
                failures.append(f"{desc}: gradviz {' '.join(shown)}: {why}")
    return {"mutants": n, "runs": runs, "refused": refused, "failures": failures}


def main(argv: list[str]) -> None:
    import tempfile

    out = Path(argv[0])
    limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else None
    mutants = all_mutants() if "--all" in argv else sample_mutants()
    if "--seed" in argv:  # a random subset of all mutants, in a random order
        everything = list(all_mutants())
        random.Random(int(argv[argv.index("--seed") + 1])).shuffle(everything)
        mutants = iter(everything)
    with tempfile.TemporaryDirectory() as d:
        try:
            result = run_mutants(mutants, Path(d), limit)
        except MemoryError:
            result = {"failures": ["MemoryError: a mutant made a command exceed the memory cap"]}
    out.write_text(json.dumps(result, indent=1))


def capped() -> None:
    """preexec_fn for the subprocess: the memory cap."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


if __name__ == "__main__":
    main(sys.argv[1:])
