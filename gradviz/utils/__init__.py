"""gradviz.utils: torch.utils's parts gradviz has (``gradviz.utils.data``)."""

from gradviz.utils import data

__all__ = ["data"]
