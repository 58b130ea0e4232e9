"""torch.func: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap)
and functional_call, computed by gradviz's reverse-mode engine (see eager_transforms and vmap
for how each maps onto it)."""

from gradviz.func.eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from gradviz.func.functional_call import functional_call, stack_module_state
from gradviz.func.module_utils import debug_unwrap, replace_all_batch_norm_modules_
from gradviz.func.vmap import vmap

__all__ = [
    "debug_unwrap",
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]

# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
