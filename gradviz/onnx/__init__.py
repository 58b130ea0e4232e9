"""torch.onnx for gradviz: importable; exporting is not supported (gradviz traces its autograd
engine, not models into ONNX graphs)."""

from __future__ import annotations

from typing import Any


def is_in_onnx_export() -> bool:
    return False


def export(*args: Any, **kwargs: Any) -> None:
    raise NotImplementedError("gradviz has no ONNX exporter: run the script under torch to use torch.onnx.export")


def dynamo_export(*args: Any, **kwargs: Any) -> None:
    export()
