"""docs/coverage.md and README's coverage block are what scripts/coverage.py makes today (issue 34
items 1 and 4): regenerated and compared, so a name added to gradviz shows up in both."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("gradviz_coverage_script", ROOT / "scripts" / "coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_coverage_doc_and_readme_block_are_current():
    script = str(ROOT / "scripts" / "coverage.py")
    r = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_public_names_follow_the_stated_definition():
    cov = _script()
    assert "relu" in cov.public_names("torch.nn.functional")
    assert "Optional" not in cov.public_names("torch.nn.functional")  # typing
    assert "Tensor" not in cov.public_names("torch.nn.functional")  # imported for annotations
    assert "math" not in cov.public_names("torch.nn.functional")  # a module
    assert "AliasDb" not in cov.public_names("torch")  # a C++ binding
    assert {"abs", "Generator", "Size", "no_grad"} <= set(cov.public_names("torch"))
    assert "grad" in cov.public_names("Tensor") and "_version" not in cov.public_names("Tensor")
    assert "Linear" in cov.public_names("torch.nn")


def test_a_stub_that_only_raises_is_not_counted():
    cov = _script()

    def stub(*a):
        """Docstring."""
        raise NotImplementedError("gradviz has no torch.x")

    def real(x):
        if x:
            raise ValueError
        return x

    assert cov._is_stub(stub) and not cov._is_stub(real)
    assert not cov.gradviz_has("torch", "definitely_not_a_torch_name")
    assert cov.gradviz_has("torch", "abs") and cov.gradviz_has("Tensor", "grad")


def test_corpus_weights_resolve_import_aliases(tmp_path, monkeypatch):
    cov = _script()
    (tmp_path / "p.py").write_text(
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
        "x = torch.ones(2)\ny = F.relu(x)\nm = nn.Linear(2, 2)\nz = x.sum()\nw = x.grad\nF.relu\n"
    )
    monkeypatch.setattr(cov, "CORPUS", tmp_path)
    rows = {p: set(cov.public_names(p)) for p in ("torch", "Tensor", "torch.nn", "torch.nn.functional")}
    uses = cov.corpus_uses(rows)
    assert uses["torch", "ones"] == 1 and uses["torch.nn.functional", "relu"] == 1  # F.relu not called: once
    assert uses["torch.nn", "Linear"] == 1 and uses["Tensor", "sum"] == 1 and uses["Tensor", "grad"] == 1
