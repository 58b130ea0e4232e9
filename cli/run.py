"""`gradviz run`: run a Python script (or -m module) as __main__ while recording the engine, like
`python SCRIPT`. A thin adapter over ``gradviz.run_script`` (gradviz/script.py)."""

from __future__ import annotations

import sys
from typing import Any

import click

from gradviz.cli._common import InputError


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


class _RunCommand(click.Command):
    """gradviz's own options come before SCRIPT or -m MODULE; everything after it is the
    script's, as with python: ``gradviz run -m pkg.train -o x`` gives the module ``-o x``. A new
    option is one more decorator on ``run`` (and a keyword to run_script): the split below finds
    the options that take a value from the command's own parameters."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {o for p in self.params if isinstance(p, click.Option) and not p.is_flag
                       for o in p.opts if o != "-m"}
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--" or not a.startswith("-"):  # SCRIPT: click takes it from here
                break
            if a == "-m" or (a.startswith("-m") and not a.startswith("--")):
                name, rest = (args[i + 1], i + 2) if a == "-m" and i + 1 < len(args) else (a[2:], i + 1)
                if a == "-m" and i + 1 >= len(args):
                    break  # click says -m needs a value
                args = [*args[:i], "-m", name, "--", *args[rest:]]
                break
            i += 2 if a in takes_value else 1
        return super().parse_args(ctx, args)


@click.command(cls=_RunCommand, context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "-o", "--output", metavar="FILE",
    help="Where to write the trace. Default: <script name>.trace.json in the current directory.",
)
@click.option(
    "--values", is_flag=True,
    help="Also store the values of small tensors (up to 64 elements), not only their statistics.",
)
@click.option(
    "--engine", type=click.Choice(["torch", "gradviz"]), default=None,
    help=("Which engine to record. torch: torch's own engine, through its hooks; gradviz: gradviz standing in "
          "for torch. Default: torch when SCRIPT imports torch and not gradviz, else gradviz."),
)
@click.option("-m", "module", metavar="MODULE",
              help="Run library module MODULE as a script, as 'python -m MODULE' does (then no SCRIPT).")
@click.option("--nproc-per-node", "nproc", type=click.IntRange(min=1), default=None, metavar="N",
              help="Launch N ranks through torch's launcher (torchrun); rank R writes NAME.rankR.trace.json.")  # ddp
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="(SCRIPT | -m MODULE) [ARGS]...")
@click.pass_context
def run(ctx: click.Context, args: tuple[str, ...], output: str | None, values: bool, engine: str | None,
        module: str | None, nproc: int | None) -> None:
    """Run SCRIPT as __main__ (with ARGS as its sys.argv[1:]) and record what the engine does.

    The trace is written even if the script fails, and gradviz exits with the script's exit
    code (1 if it raised, 130 on Ctrl-C, 143 on SIGTERM). gradviz's own options go before
    SCRIPT: everything after SCRIPT is the script's, as with `python -m cProfile`.

    \b
      gradviz run -o mlp.trace.json samples/mlp.py
      gradviz run train.py --epochs 2 -o model.pt    (the script gets --epochs 2 -o model.pt)
      gradviz run -m mypackage.train --epochs 2
    """
    from gradviz.script import ScriptError, launch_ranks, run_script  # ddp: launch_ranks

    if module is None and not args:
        raise click.UsageError("Missing argument 'SCRIPT' (or -m MODULE).")
    target, script_args = (module, args) if module is not None else (args[0], args[1:])
    try:
        if nproc is not None:  # ddp: each rank runs this command again, under torchrun
            ctx.exit(launch_ranks(nproc, target, script_args, engine=engine, output=output, values=values,
                                  module=module is not None))
        result = run_script(target, script_args, engine=engine, output=output, values=values,
                            module=module is not None, watch=_Progress)
    except ScriptError as e:
        raise (InputError if e.usage else click.ClickException)(str(e)) from None
    out = result.output
    if result.write_error is None:
        click.echo(f"gradviz: {result.written:,} events recorded to {out} ({result.status})", err=True)
    else:
        why = result.write_error.strerror or result.write_error
        click.echo(f"gradviz: {out} holds {result.written:,} of the {result.recorded:,} events recorded "
                   f"({result.status}; writing stopped: {why})", err=True)
    ctx.exit(result.exit_code)
