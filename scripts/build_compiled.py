"""Compile the engine's hot-path modules (gradviz._compiled.COMPILED_MODULES) with Cython, in place.

    python scripts/build_compiled.py          # build (needs Cython and a C compiler)
    python scripts/build_compiled.py --clean  # remove what a build made: the Python source runs

Cython compiles the unchanged .py files (its pure-Python mode: no .pyx, no hand-written C), with
annotation typing off, so every name keeps Python's semantics: the same objects, the same
errors, only without the interpreter's dispatch. Each extension module lands beside its source
(engine.cpython-311-x86_64-linux-gnu.so); gradviz._compiled uses it while it is newer than the
source. Cython is needed only here, at build time: scripts/setup.sh installs it into a scratch
folder for this run, never into gradviz's environment.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# gradviz._compiled by its path: importing the package would import numpy and more, and this
# script needs only the list.
_spec = importlib.util.spec_from_file_location("_gradviz_compiled", ROOT / "gradviz" / "_compiled.py")
assert _spec is not None and _spec.loader is not None
_compiled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_compiled)

# Python's semantics kept: type hints are not C types, a compiled function is a full Python
# function object (introspection, pickling by name), no bounds or None shortcuts.
DIRECTIVES = {
    "language_level": 3,
    "annotation_typing": False,
    "binding": True,
    "embedsignature": False,
}


def sources() -> list[Path]:
    return [ROOT / (name.replace(".", "/") + ".py") for name in _compiled.COMPILED_MODULES]


def clean() -> None:
    for source in sources():
        built = _compiled.compiled_path(str(source))
        while built is not None:
            Path(built).unlink()
            built = _compiled.compiled_path(str(source))


def build() -> None:
    from Cython.Build import cythonize
    from Cython.Compiler import Scanning
    from setuptools import Extension
    from setuptools.dist import Distribution

    extensions = [
        Extension(name, [str(source)]) for name, source in zip(_compiled.COMPILED_MODULES, sources(), strict=True)
    ]
    with tempfile.TemporaryDirectory() as scratch:
        # Cython names a source in its code objects, so in tracebacks, by a path relative to the
        # package root or the working directory ("gradviz/autograd/engine.py"). Compiled frames
        # get the absolute path instead, as interpreted ones have it, so that gradviz's checks
        # for its own frames (gradviz/script.py's _library_frame) recognise them from any
        # directory: the source descriptor's relative path is its file name, and the working
        # directory, for the translation, is the scratch folder.
        Scanning.FileSourceDescriptor.get_relative_path = lambda self: Path(self.filename)
        # Cython 3.1 names code objects by get_description() where the path is absolute (which
        # it is: sources() gives absolute paths), a path relative to the working directory: the
        # absolute one instead.
        Scanning.FileSourceDescriptor.get_description = lambda self: str(self.filename)
        os.chdir(scratch)
        modules = cythonize(
            extensions, compiler_directives=DIRECTIVES, build_dir=scratch, quiet=True, force=True,
        )
        os.chdir(ROOT)  # build_ext --inplace puts each module beside its package's source from here
        dist = Distribution({"ext_modules": modules, "script_name": "build_compiled.py"})
        dist.script_args = ["build_ext", "--inplace", "--build-temp", scratch, "--build-lib", scratch]
        dist.parse_command_line()
        dist.run_commands()
    for source in sources():
        built = _compiled.compiled_path(str(source))
        print(f"built {Path(built).relative_to(ROOT) if built else '(nothing for ' + source.name + ')'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    args = parser.parse_args()
    if args.clean:
        clean()
    else:
        build()


if __name__ == "__main__":
    main()
