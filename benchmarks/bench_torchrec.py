"""What recording real torch costs: the backward of an MLP training step under the torch
recorder (``gradviz.trace(path, engine="torch")``) against the same backward unrecorded, in one
process (issue 15: at most 3×).

- ``untraced``: ``loss.backward()`` after zero_grad and the forward (both outside the clock).
- ``torchrec``: the recording starts before the forward (setup, untimed), as ``gradviz run``
  records a script, so the forward's source lines are noted; the clock holds the backward with
  its hooks and statistics, and ``stop()`` writing the trace file.

The MLP is a real-size classifier step: batch 256, 784 -> 512 -> 512 -> 10, ReLU, cross entropy.

    python benchmarks/bench_torchrec.py [--quick]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
for _p in (str(BENCH_DIR), str(BENCH_DIR.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import _harness as h  # noqa: E402

if __name__ == "__main__":
    h.pin_threads()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gradviz  # noqa: E402


def build(cfg: h.Config) -> tuple[list[h.Workload], list[h.Claim], list[h.Skip]]:
    batch, width = (64, 256) if cfg.quick else (256, 512)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    x, y = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
    tmp = tempfile.mkdtemp(prefix="gradviz-bench-torchrec-")
    cfg.cleanups.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    path = os.path.join(tmp, "mlp.trace.json")

    def forward() -> Any:
        model.zero_grad(set_to_none=True)
        return F.cross_entropy(model(x), y)

    def untraced(loss: Any) -> None:
        loss.backward()

    def started() -> Any:
        rec = gradviz.trace(path, engine="torch")
        rec.start()
        try:
            return rec, forward()
        except BaseException:
            rec.stop("error")
            raise

    def recorded(arg: Any) -> Any:
        rec, loss = arg
        try:
            loss.backward()
        finally:
            rec.stop()
        return rec

    def check() -> dict[str, int]:
        rec = recorded(started())
        t = gradviz.load(path)
        assert t.execution_order(1)[0] == "NllLossBackward0", t.execution_order(1)
        return {"events": rec.count, "bytes": os.path.getsize(path)}

    impls = [h.Impl("untraced", untraced, forward), h.Impl("torchrec", recorded, started, check)]
    workloads = [
        h.Workload("torchrec_mlp", f"MLP training step backward (batch {batch}, width {width}), torch recorded",
                   impls, subject="torchrec", rewarm=True),
    ]  # fmt: skip
    claims = [h.Claim("Recording torch's MLP backward costs at most 3× the unrecorded one", "torchrec_mlp",
                      "untraced", 3.0)]  # fmt: skip
    return workloads, claims, []


def main(argv: list[str] | None = None) -> dict:
    return h.main("torchrec", __doc__.split("\n\n")[0], build, repeats=15, warmup=2, argv=argv)


if __name__ == "__main__":
    main()
