"""torch.backends.quantized: the quantized engine's name, settable among torch's CPU engines.
gradviz has no quantized kernels; the name is only kept."""

from __future__ import annotations

supported_engines = ["qnnpack", "onednn", "x86", "fbgemm"]
engine = "x86"
