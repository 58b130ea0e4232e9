"""gradviz.nn: torch.nn's modules, parameters, init, utils and functional API."""

from gradviz.nn import (
    functional,
    init,
    utils,  # noqa: E402 - utils imports Parameter from here
)
from gradviz.nn.modules import *  # noqa: F403 - torch.nn's module namespace
from gradviz.nn.modules import __all__ as _modules_all
from gradviz.nn.parameter import Buffer, Parameter

__all__ = ["Buffer", "Parameter", "functional", "init", "utils", *_modules_all]

# After the modules: DataParallel subclasses gradviz.nn.Module, which it reads from this package.
from gradviz.nn import parallel  # noqa: E402
from gradviz.nn.parallel import DataParallel  # noqa: E402

__all__ += ["DataParallel", "parallel"]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)

# The modules' parameters are drawn by Tensor methods the torch-like namespace installs
# (gradviz/_api.py): a program whose first import is ``gradviz.nn`` gets it whole. A no-op while
# _api itself is importing this package.
__import__("gradviz")._load_api()
