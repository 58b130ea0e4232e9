#!/usr/bin/env bash
# Set up gradviz on a fresh machine: the `dot` program (graphviz), then the package.
#   bash scripts/setup.sh          # the package, its runtime dependencies and the fast trace codecs
#   bash scripts/setup.sh --test   # also the test dependencies (pytest, hypothesis, ruff, torch==2.13.0)
#   bash scripts/setup.sh --bench  # also the peers the benchmarks compare against
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v dot >/dev/null 2>&1; then
    echo "setup: installing graphviz (the dot program)" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO apt-get update -qq && $SUDO apt-get install -y -qq graphviz >/dev/null
    elif command -v brew >/dev/null 2>&1; then
        brew install graphviz
    else
        echo "setup: install graphviz (the 'dot' program) with your package manager" >&2
        exit 1
    fi
fi

PY=${PYTHON:-python3}
case "${1:-}" in
    --test) $PY -m pip install -q -e '.[test,fast]' ;;
    --bench) $PY -m pip install -q -e '.[bench,fast]' ;;
    "") $PY -m pip install -q -e '.[fast]' ;;
    *) echo "setup: unknown option '$1' (use --test or --bench)" >&2; exit 2 ;;
esac
