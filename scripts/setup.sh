#!/usr/bin/env bash
# Set up gradviz on a fresh machine: the `dot` program (graphviz), then the package.
#   bash scripts/setup.sh          # the package, its runtime dependencies and the fast trace codecs
#                                  # (matrix products by numpy)
#   bash scripts/setup.sh --mkl    # also MKL for matrix products, on x86_64 Linux (gradviz/_blas.py: a
#                                  # download of about 220 MB, about 700 MB installed)
#   bash scripts/setup.sh --test   # also the test dependencies (pytest, pytest-xdist, hypothesis, ruff, and
#                                  # torch==2.13.0, the tests' oracle: its CPU wheel, about 200 MB to download);
#                                  # the suite then runs on numpy's products, the default install's
#   bash scripts/setup.sh --bench  # also the peers the benchmarks compare against
# Options combine: `--test --mkl` runs the suite on MKL's products.
# Where it installs: the active virtual environment if there is one; else ./.venv, made here if missing
# (Debian 12, Ubuntu 23.04+ and Homebrew refuse pip installs into the system Python: PEP 668).
# scripts/python runs the same interpreter afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

groups=""
heavy=""  # set when torch is among what is installed (its CPU wheel, below)
for option in "$@"; do
    case "$option" in
        --test) groups="${groups}test,"; heavy=1 ;;
        --bench) groups="${groups}bench,"; heavy=1 ;;
        --mkl) groups="${groups}mkl," ;;
        *) echo "setup: unknown option '$option' (use --test, --bench or --mkl)" >&2; exit 2 ;;
    esac
done
extras=".[${groups}fast]"

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

apt_install() {  # apt_install PACKAGE...: what the other steps need, with the system's package manager
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "$@" >/dev/null
    else
        return 1
    fi
}

if ! command -v dot >/dev/null 2>&1; then
    echo "setup: installing graphviz (the dot program)" >&2
    if ! apt_install graphviz; then
        if command -v brew >/dev/null 2>&1; then
            brew install graphviz
        else
            echo "setup: install graphviz (the 'dot' program) with your package manager" >&2
            exit 1
        fi
    fi
fi

if [ "$extras" = '.[test,fast]' ] && ! command -v chromium >/dev/null 2>&1; then
    # The page tests of `gradviz view` open the page in a real headless browser (Debian's chromium);
    # apt only: elsewhere those tests skip, saying why.
    if command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing chromium (headless browser for the gradviz view tests)" >&2
        apt_install chromium || echo "setup: could not install chromium: the page tests will skip" >&2
    fi
fi

PY=${PYTHON:-python3}
in_venv() { "$1" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)'; }
if ! in_venv "$PY"; then
    if [ ! -x .venv/bin/python ]; then
        echo "setup: no virtual environment is active: making one in .venv" >&2
        if ! "$PY" -m venv .venv; then
            # Debian and Ubuntu ship venv's pip bootstrap separately.
            rm -rf .venv
            ver=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
            apt_install "python$ver-venv" || apt_install python3-venv \
                || { echo "setup: '$PY -m venv' failed: install your Python's venv module" >&2; exit 1; }
            "$PY" -m venv .venv
        fi
    fi
    PY=.venv/bin/python
fi

pip_args=(-q)
if [ -n "$heavy" ] && [ "$(uname -s)" = Linux ]; then
    # torch's CPU wheel (about 200 MB) instead of the default one with the CUDA libraries (GBs),
    # from torch's CPU index when it can be reached (a closed network gets the plain index: pip
    # would otherwise retry the unreachable one for every package).
    index=${GRADVIZ_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
    if "$PY" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/', timeout=5)" "$index" \
            >/dev/null 2>&1; then
        pip_args+=(--extra-index-url "$index")
    fi
    echo "setup: installing the test dependencies, with torch==2.13.0 (a download of about 200 MB)" >&2
fi
"$PY" -m pip install "${pip_args[@]}" -e "$extras"

# The engine's hot path compiled from its unchanged .py source (scripts/build_compiled.py, Cython)
# where a C compiler and Python's headers are: backward's per-node work without the interpreter's
# dispatch. Cython and setuptools (pyproject's `compile` extra) go to a scratch folder for the build
# and are gone after it: nothing installed depends on them. Anything missing or failing: silently the
# Python source, which runs everywhere (GRADVIZ_PURE_PYTHON=1 asks for it, and skips the build).
if [ -z "${GRADVIZ_PURE_PYTHON:-}" ] && command -v cc >/dev/null 2>&1; then
    tools=$(mktemp -d)
    if "$PY" -m pip install -q --target "$tools" 'cython>=3.0,<4' 'setuptools>=61' >/dev/null 2>&1 \
            && PYTHONPATH="$tools" "$PY" scripts/build_compiled.py >/dev/null 2>&1; then
        echo "setup: compiled the engine's hot path (gradviz/_compiled.py)" >&2
    fi
    rm -rf "$tools"
fi

if [ "$PY" = .venv/bin/python ]; then
    echo "setup: gradviz is installed in .venv: run it as scripts/python -m gradviz," \
         "or '. .venv/bin/activate' to have 'gradviz' on your PATH" >&2
fi
