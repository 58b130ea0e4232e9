"""scripts/setup.sh on a stock Debian/Ubuntu Python (EXTERNALLY-MANAGED: pip refuses to install into it).

A fake ``python3`` stands in for the system's: it refuses ``pip install`` as Debian's does, and its
``-m venv`` makes a fake venv whose pip only logs what it was asked to install. Nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FAKE_SYSTEM_PYTHON = r"""#!/usr/bin/env bash
# A system python3 under PEP 668, as on Debian 12.
log="$FAKE_LOG"
if [ "$1" = -c ]; then
    case "$2" in
        *base_prefix*) exit 1 ;;                       # not a virtual environment
        *version_info*) echo 3.11; exit 0 ;;
    esac
    exit 0
fi
if [ "$1" = -m ] && [ "$2" = pip ]; then
    echo "system pip $*" >> "$log"
    echo "error: externally-managed-environment" >&2
    exit 1
fi
if [ "$1" = -m ] && [ "$2" = venv ]; then
    echo "venv $3" >> "$log"
    mkdir -p "$3/bin"
    cat > "$3/bin/python" <<'VENV'
#!/usr/bin/env bash
if [ "$1" = -c ]; then exit 0; fi                      # sys.prefix != sys.base_prefix: a venv
echo "venv python $*" >> "$FAKE_LOG"
VENV
    chmod +x "$3/bin/python"
    ln -s python "$3/bin/python3"
    exit 0
fi
exit 3
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of what setup.sh touches, so the real .venv is left alone."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "python"):
        shutil.copy2(REPO / "scripts" / name, repo / "scripts" / name)
    shutil.copy2(REPO / "pyproject.toml", repo / "pyproject.toml")
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text(FAKE_SYSTEM_PYTHON)
    fake.chmod(0o755)
    return repo


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHON", "GRADVIZ_TORCH_INDEX")}
    # The fake python3 first on PATH, as the system's would be; dot must be found (skip its install).
    env["PATH"] = f"{tmp_path / 'bin'}:{os.path.dirname(shutil.which('dot') or '/usr/bin/dot')}:/usr/bin:/bin"
    env["FAKE_LOG"] = str(tmp_path / "log")
    env["GRADVIZ_PURE_PYTHON"] = "1"  # no compile step (test_setup_compiles_the_hot_path_where_cc_is)
    return env


@pytest.mark.skipif(shutil.which("dot") is None, reason="setup.sh would try to install graphviz")
def test_setup_on_an_externally_managed_python_makes_and_uses_a_venv(checkout: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    r = subprocess.run(["bash", "scripts/setup.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    log = (tmp_path / "log").read_text().splitlines()
    assert log == ["venv .venv", "venv python -m pip install -q -e .[fast]"], log
    assert "scripts/python -m gradviz" in r.stderr
    # The README's next command runs through the same interpreter.
    r = subprocess.run(["bash", "scripts/python", "-m", "gradviz", "run"], cwd=checkout, env=env,
                       capture_output=True, text=True, timeout=60)
    assert (tmp_path / "log").read_text().splitlines()[-1] == "venv python -m gradviz run"
    # Again, with the test extras: the venv is reused, torch comes from the CPU wheel index.
    r = subprocess.run(["bash", "scripts/setup.sh", "--test"], cwd=checkout, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    last = (tmp_path / "log").read_text().splitlines()[-1]
    cpu = "https://download.pytorch.org/whl/cpu"
    assert last == f"venv python -m pip install -q --extra-index-url {cpu} -e .[test,fast]"
    assert "about 200 MB" in r.stderr
    assert "venv .venv" not in (tmp_path / "log").read_text().splitlines()[2:]


@pytest.mark.skipif(shutil.which("dot") is None, reason="setup.sh would try to install graphviz")
def test_setup_in_an_active_venv_installs_there(checkout: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    venv = tmp_path / "active"
    subprocess.run([str(tmp_path / "bin" / "python3"), "-m", "venv", str(venv)], env=env, check=True)
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    r = subprocess.run(["bash", "scripts/setup.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert not (checkout / ".venv").exists()
    assert (tmp_path / "log").read_text().splitlines()[-1] == "venv python -m pip install -q -e .[fast]"


def test_readme_commands_and_ci_agree() -> None:
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    main = "bash scripts/setup.sh && scripts/python -m gradviz run -o mlp.trace.json samples/mlp.py"
    tests = "bash scripts/setup.sh --test && scripts/python -m pytest -q -n auto --dist worksteal"
    assert main in readme and tests in readme
    assert tests in ci and "scripts/python\" -m gradviz run -o mlp.trace.json samples/mlp.py" in ci
    assert "200 MB" in readme.split(tests)[0].splitlines()[-1]  # the line above says what it downloads


@pytest.mark.skipif(shutil.which("dot") is None, reason="setup.sh would try to install graphviz")
def test_setup_mkl_is_an_option_of_its_own(checkout: Path, tmp_path: Path) -> None:
    """MKL is opt-in (issue 32): the default install has none; --mkl adds the extra, with --test too."""
    env = _env(tmp_path)
    venv = tmp_path / "active"
    subprocess.run([str(tmp_path / "bin" / "python3"), "-m", "venv", str(venv)], env=env, check=True)
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    for args, extras in (([], ".[fast]"), (["--mkl"], ".[mkl,fast]")):
        r = subprocess.run(["bash", "scripts/setup.sh", *args], cwd=checkout, env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "log").read_text().splitlines()[-1].endswith(f"pip install -q -e {extras}")
    r = subprocess.run(["bash", "scripts/setup.sh", "--fast"], cwd=checkout, env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "--mkl" in r.stderr


@pytest.mark.skipif(shutil.which("dot") is None or shutil.which("cc") is None, reason="needs dot and cc")
def test_setup_compiles_the_hot_path_where_cc_is(checkout: Path, tmp_path: Path) -> None:
    # after the install, the build tools go to a scratch folder (--target), never into the venv,
    # and scripts/build_compiled.py runs; GRADVIZ_PURE_PYTHON=1 skips both
    env = _env(tmp_path)
    del env["GRADVIZ_PURE_PYTHON"]
    r = subprocess.run(["bash", "scripts/setup.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    log = (tmp_path / "log").read_text().splitlines()
    assert log[:2] == ["venv .venv", "venv python -m pip install -q -e .[fast]"], log
    assert "--target" in log[2] and "cython" in log[2], log
    assert log[3:] == ["venv python scripts/build_compiled.py"], log
