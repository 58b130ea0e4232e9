"""`gradviz view`: the page, opened in a real headless Chromium, shows the replay fold's state.

At several steps of multi-task traces (recorded from the engine, and a reentrant one), every
node box's ``data-state`` equals replay's fold at that step, and the page shows the task running
at that step; a screenshot is not blank. Chromium is Debian's (scripts/setup.sh --test)."""

from __future__ import annotations

import html
import json
import re

import pytest
from _chromium import CHROMIUM, SKIP_REASON, PageDom, dump_dom, png_pixels, screenshot
from click.testing import CliRunner
from trace_builders import failing, reentrant

import gradviz as torch
from gradviz.cli import main
from gradviz.replay.state import fold
from gradviz.trace import load, trace
from gradviz.trace.file import save

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)


def _task_running(st, tasks):
    """The task the page must show after the fold ``st``: the innermost (latest begun) running
    task, else the one begun last, else the first."""
    running = [t for t in st.tasks.values() if t.status == "running"]
    if running:
        return max(running, key=lambda t: t.begin_step).id
    begun = list(st.tasks.values())
    if begun:
        return max(begun, key=lambda t: t.begin_step).id
    return next(iter(tasks))


def _expected(tr, step):
    st = fold(tr.events[:step])
    return st, _task_running(st, tr.tasks)


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    path = tmp_path / "two.trace.json"
    with trace(path):
        (a * a + a.to("virtual:0").exp().to("cpu")).sum().backward()
        (a.sin() * 3).sum().backward()
    return path


def _view(path, *args):
    r = CliRunner().invoke(main, ["view", str(path), *args])
    assert r.exit_code == 0, r.output
    return r


def _check_steps(tmp_path, trace_path, page, steps):
    tr = load(trace_path)
    seen_tasks = set()
    for step in steps:
        dom = PageDom(dump_dom(f"{page.resolve().as_uri()}#step={step}", tmp_path / "profile"))
        assert dom.body.get("data-ready") == "1", f"step {step}: the page did not finish loading its data"
        st, task = _expected(tr, step)
        assert dom.current["data-step"] == str(step)
        assert dom.current["data-task"] == str(task), f"step {step}: shows task {dom.current['data-task']}"
        assert dom.ids["graph"]["data-task"] == str(task)
        assert dom.nodes, f"step {step}: no node boxes in the page"
        want = {n: (st.nodes[n].state if n in st.nodes else "unreached") for n in dom.nodes}
        assert dom.nodes == want, f"step {step}"
        seen_tasks.add(task)
    return seen_tasks


@needs_chromium
@pytest.mark.slow
def test_states_and_task_at_each_step_match_the_fold(tmp_path, recorded):
    _view(recorded, "-o", "two.html")
    tr = load(recorded)
    n = len(tr)
    (t1, t2) = list(tr.tasks)
    ends = {t: next(e.seq for e in tr.events if e.kind == "task_end" and e.task == t) for t in (t1, t2)}
    begins = {t: next(e.seq for e in tr.events if e.kind == "task_begin" and e.task == t) for t in (t1, t2)}
    steps = [0, begins[t1] + 6, (begins[t1] + ends[t1]) // 2, begins[t2] + 8, ends[t2] - 2, n]
    shown = _check_steps(tmp_path, recorded, tmp_path / "two.html", steps)
    assert shown == {t1, t2}


@needs_chromium
@pytest.mark.slow
def test_reentrant_task_is_shown_while_it_runs_and_task_fragment_pins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tr = reentrant()
    save(tr.events, tmp_path / "re.trace.json")
    _view(tmp_path / "re.trace.json", "-o", "re.html")
    inner = [t for t in tr.tasks if tr.tasks[t].begin.reentrant_depth > 0][0]
    b = next(e.seq for e in tr.events if e.kind == "task_begin" and e.task == inner)
    shown = _check_steps(tmp_path, tmp_path / "re.trace.json", tmp_path / "re.html", [b - 1, b + 4, len(tr)])
    assert inner in shown and len(shown) == 2
    # #task=K shows that task whatever the step
    outer = next(t for t in tr.tasks if t != inner)
    url = f"{(tmp_path / 're.html').resolve().as_uri()}#step={b + 4}&task={outer}"
    dom = PageDom(dump_dom(url, tmp_path / "profile"))
    assert dom.current["data-task"] == str(outer) and dom.current["data-step"] == str(b + 4)


@needs_chromium
@pytest.mark.slow
def test_error_trace_and_screenshot_is_not_blank(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tr = failing()
    save(tr.events, tmp_path / "f.trace.json")
    _view(tmp_path / "f.trace.json")  # default name: f.html, in the current folder
    page = tmp_path / "f.html"
    err = next(e.seq + 1 for e in tr.events if e.kind == "error")
    dom = PageDom(dump_dom(f"{page.resolve().as_uri()}#step={err}", tmp_path / "profile"))
    assert "error" in dom.nodes.values()
    shot = screenshot(f"{page.resolve().as_uri()}#step={err}", tmp_path / "f.png", tmp_path / "profile", "800,600")
    w, h, colours = png_pixels(shot)
    assert (w, h) == (800, 600)
    assert len(colours) > 50, f"the screenshot looks blank ({len(colours)} distinct pixel values)"


@needs_chromium
@pytest.mark.slow
def test_why_panel_shows_the_answer_for_the_selected_node(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tr = reentrant()
    save(tr.events, tmp_path / "re.trace.json")
    node = next(iter(tr.nodes))
    answers = {"nodes": {str(node): {"question": "why", "reason": "not_needed", "where": "model.py:7",
                                     "text": "its input does not require grad"}}}
    (tmp_path / "why.json").write_text(json.dumps(answers))
    _view(tmp_path / "re.trace.json", "--why", "why.json", "-o", "re.html")
    url = (tmp_path / "re.html").resolve().as_uri()

    def panel(n):  # the why panel's text (the answers are also in the page's data: not that)
        m = re.search(r'<div id="why">([^<]*)</div>', dump_dom(f"{url}#step=10&node={n}", tmp_path / "profile"))
        assert m is not None
        return html.unescape(m.group(1))

    text = panel(node)
    assert "its input does not require grad" in text and "model.py:7" in text
    assert f"(node {node})" in text
    other = next(n for n in tr.nodes if n != node)
    assert "gradviz why TRACE --json" in panel(other)


def test_page_is_self_contained_and_carries_why_answers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save(reentrant().events, tmp_path / "re.trace.json")
    answers = {"nodes": {"3": {"question": "why", "reason": "r", "where": "x.py:1", "text": "because </script>"}}}
    (tmp_path / "why.json").write_text(json.dumps(answers))
    r = _view(tmp_path / "re.trace.json", "--why", "why.json")
    assert "wrote re.html" in r.output
    text = (tmp_path / "re.html").read_text()
    assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text
    assert "<script src" not in text and "<link" not in text
    assert text.count("</script>") == text.count("<script")  # the answer's text cannot close a script
    assert "because \\u003c/script>" in text


def test_bad_input_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save(reentrant().events, tmp_path / "re.trace.json")
    r = CliRunner().invoke(main, ["view", "re.trace.json", "--task", "99"])
    assert r.exit_code != 0 and "no graph task 99" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["view", "missing.json"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    (tmp_path / "bad.json").write_text("[1, 2")
    r = CliRunner().invoke(main, ["view", "re.trace.json", "--why", "bad.json"])
    assert r.exit_code != 0 and "bad.json" in r.output and "Traceback" not in r.output


def test_open_hands_the_page_to_the_browser(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save(reentrant().events, tmp_path / "re.trace.json")
    opened = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url))
    _view(tmp_path / "re.trace.json", "--open", "-o", "sub/page.html")
    assert opened == [(tmp_path / "sub" / "page.html").resolve().as_uri()]
