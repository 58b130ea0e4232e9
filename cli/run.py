"""`gradviz run`: run a Python script as __main__ while recording the engine, like `python SCRIPT`."""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

import click


class _Terminated(BaseException):
    """SIGTERM, turned into an exception so the trace is finished before the process goes."""


def _torchrec_engine(path: Path) -> str:
    """"torch" when the script imports torch and not gradviz (torchrec's auto-detection)."""
    from gradviz.torchrec.detect import engine_of

    return engine_of(path)


def _exit_code(e: SystemExit) -> int:
    """What the interpreter would exit with for sys.exit(code), printing a non-int code as it does."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _script_tb(tb: TracebackType | None, script: str) -> TracebackType | None:
    """The traceback from the script's first frame on: gradviz's and runpy's frames hidden."""
    target = os.path.abspath(script)
    t = tb
    while t is not None:
        if os.path.abspath(t.tb_frame.f_code.co_filename) == target:
            return t
        t = t.tb_next
    return None


_GRADVIZ_DIR = os.path.dirname(os.path.abspath(__import__("gradviz").__file__)) + os.sep


def _library_frame(filename: str) -> bool:
    """A frame of gradviz, of an installed package or of the standard library."""
    import sysconfig

    path = os.path.abspath(filename)
    if filename.startswith("<") or path.startswith(_GRADVIZ_DIR):
        return True
    paths = sysconfig.get_paths()
    return any(path.startswith(os.path.abspath(paths[k]) + os.sep)
               for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)  # fmt: skip


def _print_exception(e: BaseException, script: str) -> None:
    tb = _script_tb(e.__traceback__, script)
    if isinstance(e, KeyboardInterrupt):
        # Ctrl-C lands wherever the program is, often inside the engine or the recorder that
        # gradviz run added: end the traceback at the user's last frame.
        # The user's last frame: not gradviz's, and not a library's it called into (numpy, the
        # stdlib's threading), where the interrupt may land too.
        last, t = None, tb
        while t is not None:
            if not _library_frame(t.tb_frame.f_code.co_filename):
                last = t
            t = t.tb_next
        if last is not None:
            last.tb_next = None
    traceback.print_exception(type(e), e, tb, file=sys.stderr)


def _engine(engine: str | None) -> Any:
    """--engine gradviz: gradviz stands in for torch (and every torch.X) while the script runs."""
    import contextlib

    if engine != "gradviz":
        return contextlib.nullcontext()
    from gradviz._as_torch import as_torch

    return as_torch()


def _missing_api(e: BaseException) -> str | None:
    from gradviz._as_torch import missing_api

    found = missing_api(e)
    return found[1] if found else None


class _Progress:
    """"recording: N events" on stderr while the script runs, only when stderr is a terminal."""

    def __init__(self, recorder: Any, output: str):
        self._live: Any = None
        if not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self._live = Live(
            get_renderable=lambda: Text(f"gradviz: recording {recorder.count:,} events -> {output}"),
            console=Console(stderr=True),
            refresh_per_second=4,
            transient=True,
        )

    def __enter__(self) -> _Progress:
        if self._live is not None:
            self._live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.stop()


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "-o", "--output", metavar="FILE",
    help="Where to write the trace. Default: <script name>.trace.json in the current directory.",
)  # fmt: skip
@click.option(
    "--values", is_flag=True,
    help="Also store the values of small tensors (up to 64 elements), not only their statistics.",
)  # fmt: skip
@click.option(
    "--engine", type=click.Choice(["torch", "gradviz"]), default=None,
    help=("Which engine to record. torch: torch's own engine, through its hooks; gradviz: gradviz standing in "
          "for torch. Default: torch when SCRIPT imports torch and not gradviz, else gradviz."),
)  # fmt: skip
@click.option(
    "--nproc-per-node", "nproc", type=click.IntRange(min=1), default=None, metavar="N",
    help="Launch N ranks through torch's launcher (torchrun); rank R writes NAME.rankR.trace.json.",
)  # fmt: skip
@click.argument("script", metavar="SCRIPT")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def run(
    ctx: click.Context, script: str, args: tuple[str, ...], output: str | None, values: bool, engine: str | None,
    nproc: int | None,
) -> None:
    """Run SCRIPT as __main__ (with ARGS as its sys.argv[1:]) and record what the engine does.

    The trace is written even if the script fails, and gradviz exits with the script's exit
    code (1 if it raised, 130 on Ctrl-C, 143 on SIGTERM). gradviz's own options go before
    SCRIPT: everything after SCRIPT is the script's, as with `python -m cProfile`.

    \b
      gradviz run -o mlp.trace.json samples/mlp.py
      gradviz run train.py --epochs 2 -o model.pt    (the script gets --epochs 2 -o model.pt)
    """
    from gradviz.trace.recorder import Recorder, deferring_handler

    script_args = list(args)
    path = Path(script)
    if not path.is_file():
        problem = "no such file" if not path.exists() else "not a file"
        raise click.ClickException(f"{script}: {problem}")
    out = output or f"{path.stem}.trace.json"
    from gradviz import launch  # ddp: ranks of a distributed job

    if nproc is not None:  # ddp: each rank runs this command again, under torchrun
        opts = [*(["-o", out] if output else []), *(["--values"] if values else [])]
        opts += ["--engine", engine] if engine else []
        ctx.exit(launch.launch(nproc, [*opts, script, *script_args]))
    out = launch.output_for_rank(out)  # ddp: NAME.rankR.trace.json inside a job
    # One rule for every command's output: missing folders of -o are created.
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if (engine or _torchrec_engine(path)) == "torch":  # record real torch's engine
        from gradviz.torchrec import TorchRecorder as Recorder  # noqa: F811
    recorder = Recorder(out, values=values)

    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *script_args]  # before start(): trace_begin records the script's argv
    script_dir = str(path.resolve().parent)
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    main_thread = threading.current_thread() is threading.main_thread()
    saved_int = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        recorder.start()
    except (RuntimeError, OSError) as e:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
        msg = str(e) if isinstance(e, RuntimeError) else f"{out}: {e.strerror or e}"
        raise click.ClickException(msg) from None
    on_term = deferring_handler(signal.SIGTERM, _Terminated)
    saved_term = signal.signal(signal.SIGTERM, on_term) if main_thread else None
    status, error, code = "ok", None, 0
    from gradviz.autograd import graph

    graph.script_entry = os.path.abspath(script)  # anomaly mode's forward stacks start at the script
    try:
        with _Progress(recorder, out), _engine(engine):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e)
        if code != 0:
            status, error = "error", e
    except KeyboardInterrupt as e:
        status, code = "interrupted", 130
        _print_exception(e, script)
    except _Terminated:
        status, code = "interrupted", 128 + signal.SIGTERM
    except BaseException as e:  # noqa: BLE001 - whatever the script raises is its exit status
        status, error, code = "error", e, 1
        missing = _missing_api(e) if engine == "gradviz" else None
        if missing:  # a torch API gradviz lacks: one line, no traceback of gradviz's own
            click.echo(missing, err=True)
        else:
            _print_exception(e, script)
    finally:
        if main_thread:  # a second Ctrl-C or SIGTERM must not cut the trace's last lines
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.argv = saved_argv
        graph.script_entry = None
        if saved_path0 is not None:
            sys.path[0] = saved_path0
        recorder.stop(status, error)
        if main_thread:
            signal.signal(signal.SIGTERM, saved_term)
            signal.signal(signal.SIGINT, saved_int)
    click.echo(f"gradviz: {recorder.count:,} events recorded to {out} ({status})", err=True)
    ctx.exit(code)
