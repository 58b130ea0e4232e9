"""gradviz.nn: torch.nn's functional API (``gradviz.nn.functional``), as far as gradviz has it."""

from gradviz.nn import functional

__all__ = ["functional"]
