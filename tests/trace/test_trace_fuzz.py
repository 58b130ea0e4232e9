"""Damaged trace files: every one loads (with a warning when cut short) or raises a one-line
TraceError naming the event and field; never another exception, never a hang. Same for
`gradviz info` on them. Runtime is bounded: a small base trace, capped example counts."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_builders import diamond

from gradviz.cli import main
from gradviz.trace import TraceError, TraceWarning, codec, load
from gradviz.trace import events as ev
from gradviz.trace.file import HEADER, HEADER_V2, save
from gradviz.trace.text import neutralise

EVENTS = diamond().events
FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("fuzz") / "base.json"
    save(EVENTS, path)
    return path.read_bytes()


def outcome(path) -> tuple[str, object]:
    """("ok", trace) or ("error", message); asserts the contract on the way."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t = load(path)
        except TraceError as e:
            msg = str(e)
            assert "\n" not in msg and msg.startswith(f"{path}: "), msg
            return "error", msg
    warned = [w for w in caught if issubclass(w.category, TraceWarning)]
    assert len(warned) == (1 if t.truncated else 0), [str(w.message) for w in caught]
    if t.truncated:
        assert f"recovered {len(t.events)} events" in str(warned[0].message)
    return "ok", t


def info_behaves(path) -> None:
    r = CliRunner().invoke(main, ["info", str(path)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    if r.exit_code != 0:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: "), r.stderr
        assert r.stdout == ""
    else:
        kind, t = outcome(path)
        assert kind == "ok"
        assert ("warning:" in r.stderr) == t.truncated


@pytest.mark.slow
def test_cut_at_every_byte_offset_loads_a_prefix_or_fails_cleanly(tmp_path, base):
    path = tmp_path / "cut.json"
    newlines = [i for i, b in enumerate(base) if b == ord("\n")]
    for n in range(len(base) + 1):
        path.write_bytes(base[:n])
        kind, result = outcome(path)
        if n < newlines[0]:  # the header itself is cut: nothing to recover
            assert kind == "error"
            continue
        assert kind == "ok", (n, result)
        events = result.events  # type: ignore[attr-defined]
        assert events == EVENTS[: len(events)]  # a prefix, nothing invented
        complete_lines = sum(1 for i in newlines if i < n) - 1  # event lines wholly present
        assert len(events) >= min(complete_lines, len(EVENTS))
        if n >= len(base) - 1:  # only the footer's last bytes are missing: every event is there
            assert len(events) == len(EVENTS)
        if n % 97 == 0:  # the CLI on a sample of the cuts (each invocation costs a few ms)
            info_behaves(path)


@FUZZ
@given(data=st.data())
def test_corrupted_bytes(tmp_path, base, data):
    buf = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "corrupt.json"
    path.write_bytes(bytes(buf))
    kind, result = outcome(path)
    if kind == "error":
        assert any(w in result for w in ("event ", "line ", "header", "not a gradviz trace")), result


def _event_lines(base: bytes) -> list[bytes]:
    return base.split(b"\n")[1:-2]


def _rebuild(lines: list[bytes], head: bytes = HEADER) -> bytes:
    body = [ln.rstrip(b",") for ln in lines]
    header = head.rstrip(b"\n")
    return b"\n".join([header, b",\n".join(body), b"]}", b""])


def _write(tmp_path, lines: list[bytes]):
    path = tmp_path / "shuffled.json"
    path.write_bytes(_rebuild(lines, HEADER))
    return path


@pytest.fixture(scope="module")
def base_v2(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("fuzz") / "base2.json"
    save(EVENTS, path, format_version=2)
    return path.read_bytes()


@FUZZ
@given(data=st.data())
def test_dropped_and_reordered_events_are_named(tmp_path, base, data):
    """Format 3: an event's seq is its line's position. Lines dropped before the end are missed
    by trace_end's count (or by the checks on trace_begin); lines swapped are a different order,
    read as such, unless a bookend moved."""
    lines = _event_lines(base)
    last = len(lines) - 1
    if data.draw(st.booleans()):
        drop = data.draw(st.sets(st.integers(0, last), min_size=1, max_size=3))
        lines = [ln for i, ln in enumerate(lines) if i not in drop]
        swapped = None
        if 0 not in drop and last in drop:  # no trace_end, no count to check: a trace cut short
            kind, result = outcome(_write(tmp_path, lines))
            # unless what went announced an id a later event names (gradviz.trace.validate)
            assert (kind == "ok" and result.truncated) or "announced before" in result  # type: ignore[attr-defined]
            return
    else:
        i, j = sorted(data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=2, max_size=2, unique=True)))
        lines[i], lines[j] = lines[j], lines[i]
        swapped = (i, j)
    kind, result = outcome(_write(tmp_path, lines))
    if lines == _event_lines(base)[: len(lines)]:  # only a tail went: a trace that did not finish
        assert kind == "ok" and result.truncated  # type: ignore[attr-defined]
    elif swapped is not None and 0 not in swapped and len(lines) - 1 not in swapped:
        if kind == "error":  # an id now named before what announces it (gradviz.trace.validate)
            assert "announced before" in result or "inputs" in result or "outputs" in result, result
            assert re.search(r": event \d+ \(\w+\): field '\w+' ", result), result
        else:
            assert [e.kind for e in result.events] == [  # type: ignore[attr-defined]
                json.loads(ln.rstrip(b","))[0] for ln in lines
            ]
    else:
        assert kind == "error"
        assert "trace_begin" in result or "trace_end" in result, result


@FUZZ
@given(data=st.data())
def test_dropped_and_reordered_events_are_named_in_format_2(tmp_path, base_v2, data):
    base = base_v2
    lines = _event_lines(base)
    if data.draw(st.booleans()):
        drop = data.draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=3))
        first = min(drop)
        lines = [ln for i, ln in enumerate(lines) if i not in drop]
    else:
        i, j = sorted(data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=2, max_size=2, unique=True)))
        lines[i], lines[j] = lines[j], lines[i]
        first = i
    path = tmp_path / "shuffled.json"
    path.write_bytes(_rebuild(lines, HEADER_V2))
    kind, result = outcome(path)
    if lines == _event_lines(base)[: len(lines)]:  # only a tail went: a trace that did not finish
        assert kind == "ok" and result.truncated  # type: ignore[attr-defined]
    else:
        assert kind == "error"
        assert f"event {first} " in result or f"event {first}:" in result, result


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def _json_type(v) -> str:
    return type(v).__name__


@FUZZ
@given(data=st.data())
def test_changed_field_types_are_named(tmp_path, base, data):
    lines = _event_lines(base)
    i = data.draw(st.integers(0, len(lines) - 1))
    a = json.loads(lines[i].rstrip(b","))
    names = codec.FIELDS[a[0]]
    name = data.draw(st.sampled_from(sorted(names)))
    k = names.index(name)
    value = data.draw(JSON_VALUES.filter(lambda v: _json_type(v) != _json_type(a[k])))
    d_was_null = a[k] is None
    a[k] = value
    lines[i] = json.dumps(a).encode()
    path = tmp_path / "retyped.json"
    path.write_bytes(_rebuild(lines))
    kind, result = outcome(path)
    if kind == "error":
        assert f"event {i}" in result and f"field '{name}" in result, result
    else:  # only fields that take any value, or null, may change type and still load; and an
        # optional field set from null to a value of its type (thread_start's device: null -> "")
        got = json.loads(codec.encode_line(result.events[i]))[k]  # type: ignore[attr-defined]
        # a finite number is a stats field in format 3 (a one-element tensor's x): stats,
        # accumulate_grad's before and after
        spec = {n: sp for n, sp, _ in codec._SPECS[ev.KINDS[a[0]]]}.get(name)
        is_stats = spec is not None and codec._needs_care(spec) == "stats"
        scalar_stats = is_stats and type(value) in (int, float) and value - value == 0
        # load writes a string's control characters as escapes (trace.text.neutralise)
        shown = neutralise(value) if type(value) is str else value
        assert name == "values" or value is None or scalar_stats or (d_was_null and got == shown), (name, value)
    if data.draw(st.integers(0, 9)) == 0:
        info_behaves(path)


@settings(max_examples=40, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_info_on_damaged_files(tmp_path, base, data):
    buf = bytearray(base[: data.draw(st.integers(0, len(base)))])
    for _ in range(data.draw(st.integers(0, 2))):
        if buf:
            buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "damaged.json"
    path.write_bytes(bytes(buf))
    info_behaves(path)


@pytest.mark.parametrize("value", [0, 2.5, -3])
@pytest.mark.parametrize(("kind", "field"), [("buffer_add", "stats"), ("accumulate_grad", "after")])
def test_a_finite_number_as_stats_is_a_one_element_summary(tmp_path, base, value, kind, field):
    """Format 3 writes a one-element tensor's stats as its value x: a number there loads as
    [abs(x), x, x, 0, 0] in every stats field (the cases the field-type fuzz drew as wrong types)."""
    lines = _event_lines(base)
    i = next(j for j, ln in enumerate(lines) if json.loads(ln.rstrip(b","))[0] == kind)
    a = json.loads(lines[i].rstrip(b","))
    a[codec.FIELDS[kind].index(field)] = value
    lines[i] = json.dumps(a).encode()
    path = tmp_path / "scalar.json"
    path.write_bytes(_rebuild(lines))
    kind, t = outcome(path)
    assert kind == "ok", t
    s = getattr(t.events[i], field)
    assert (s.norm, s.min, s.max, s.nan, s.inf) == (abs(value), value, value, 0, 0)
