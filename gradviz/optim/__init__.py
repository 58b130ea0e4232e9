"""gradviz.optim: torch.optim's optimizers and learning-rate schedulers (``import gradviz as torch``
then ``torch.optim.SGD(...)``)."""

from gradviz.optim import lr_scheduler, swa_utils
from gradviz.optim._ops import use_fused_multiply_add
from gradviz.optim.adam import Adam, Adamax, AdamW, NAdam, RAdam
from gradviz.optim.adaptive import Adadelta, Adagrad, RMSprop
from gradviz.optim.asgd import ASGD
from gradviz.optim.lbfgs import LBFGS
from gradviz.optim.optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from gradviz.optim.rprop import Rprop
from gradviz.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "LBFGS", "Adamax", "NAdam", "RAdam",
           "Rprop", "ASGD", "lr_scheduler", "swa_utils",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "use_fused_multiply_add"]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
