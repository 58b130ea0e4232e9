"""gradviz.utils: torch.utils's parts gradviz has (``gradviz.utils.data``)."""

from gradviz.utils import data

__all__ = ["data"]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
