"""torch.nn.utils: gradient clipping, parameters <-> vector, fusion, parametrizations, pruning,
weight and spectral norm hooks, packed sequences, functional_call."""

from gradviz.nn.utils import parametrizations, parametrize, rnn, stateless
from gradviz.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from gradviz.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from gradviz.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from gradviz.nn.utils.init import skip_init
from gradviz.nn.utils.memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from gradviz.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from gradviz.nn.utils.stateless import functional_call
from gradviz.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector", "rnn",
    "vector_to_parameters", "clip_grads_with_norm_", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
    "fuse_linear_bn_eval", "fuse_linear_bn_weights", "parametrizations", "parametrize", "stateless",
    "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "functional_call", "skip_init",
    "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
