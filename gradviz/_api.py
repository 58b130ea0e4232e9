"""gradviz's torch-like namespace: ``import gradviz as torch`` finds these names.

gradviz/__init__.py imports this module at the first use of a name from it and publishes every
name here into the package (the trace-reading commands never need them: gradviz/__init__.py).
"""

from __future__ import annotations

from gradviz import autograd, nn

# torch's dtypes and default dtype (ops block, issue 14)
from gradviz._dtype import (
    bfloat16,
    double,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from gradviz._dtype import bool_ as bool  # noqa: A001 - torch.bool
from gradviz._dtype import float as float  # noqa: A001 - torch.float
from gradviz._dtype import int as int  # noqa: A001 - torch.int
from gradviz._finfo import finfo, iinfo
from gradviz.autograd import (
    detect_anomaly,
    enable_grad,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from gradviz.device import device
from gradviz.ops import *  # noqa: F403 - the torch-style function namespace
from gradviz.ops import functions as _functions
from gradviz.ops.construction import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    arange,
    as_tensor,
    asarray,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from gradviz.ops.sparse_ops import (  # noqa: E402 - sparse COO tensors (gradviz/ops/sparse_ops.py)
    layout,
    sparse_coo,
    sparse_coo_tensor,
    spmm,
    strided,
)
from gradviz.tensor import Size, Tensor, is_tensor

# torch.max / torch.min / torch.abs / torch.pow etc. as functions (the star import skips builtins
# names that ruff would flag; bind them explicitly).
max = _functions.max  # noqa: A001
min = _functions.min  # noqa: A001
abs = _functions.abs  # noqa: A001
pow = _functions.pow  # noqa: A001
sum = _functions.sum  # noqa: A001

try:  # the trace layer lands separately; the core works without it
    from gradviz.trace import TraceError, load, record, trace  # noqa: F401
except ImportError:  # pragma: no cover
    pass
from gradviz.script import run_script  # noqa: E402,F401,I001 - what `gradviz run` does, as a call

# gradviz.draw (torchviz's one call) and notebook display of traces and recordings (gradviz.view;
# the viewer itself is imported on first use).
from gradviz.trace.recorder import Recorder as _Recorder  # noqa: E402
from gradviz.view.hooks import draw  # noqa: E402, F401
from gradviz.view.hooks import install as _install_view  # noqa: E402

_install_view(_Recorder)


# --- torch-identical random numbers (gradviz.random) ---------------------------------------------
# These rebind tensor.py's numpy-seeded rand/randn/randint/manual_seed to the generator that
# reproduces torch's CPU stream, and add the rest of torch's random API and Tensor methods.
from gradviz import random  # noqa: E402
from gradviz.random import (  # noqa: E402
    Generator,
    default_generator,
    fork_rng,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from gradviz.random._api import (  # noqa: E402
    bernoulli,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
)
from gradviz.random.binomial import binomial  # noqa: E402
from gradviz.random.gamma import (  # noqa: E402
    _dirichlet_grad,
    _sample_dirichlet,
    _standard_gamma,
    _standard_gamma_grad,
    poisson,
)
from gradviz.random.methods import install as _install_random_methods  # noqa: E402

_install_random_methods()

from gradviz.ops.inplace_views import install as _install_inplace_views  # noqa: E402

_install_inplace_views()  # unsqueeze_, squeeze_, t_, transpose_; add_(alpha, other) as torch still takes it

# --- device plumbing: torch.cuda, backends, accelerator, amp, distributed, onnx, compile ---------
# gradviz.cuda, .backends, .accelerator, .amp, .distributed, .onnx and .distributions answer as
# torch's do on a machine without the hardware (see each module); compile returns its argument.
from gradviz import accelerator, amp, backends, cuda, distributed, distributions, linalg, onnx  # noqa: E402
from gradviz._compile import compile  # noqa: E402, A004 - torch.compile
from gradviz.amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402


# --- dir(gradviz): the public API only ---------------------------------------------------------
# The ops come in through their __all__ (torch's names, gradviz/ops/functions.py); what else this
# module imports for its own use (numpy, typing) stays out of dir() and tab completion.
def __dir__() -> list[str]:
    import types

    public = []
    for name, value in globals().items():
        if name.startswith("_"):
            continue
        if isinstance(value, types.ModuleType) and not value.__name__.startswith("gradviz"):
            continue  # np, math, builtins, warnings...
        if getattr(value, "__module__", None) in ("typing", "collections.abc", "__future__"):
            continue  # Any, Sequence, annotations
        public.append(name)
    return sorted(public)


# --- torch.optim, torch.utils.data, torch.serialization (torch.save / torch.load), default device --
# gradviz.save is torch.save; gradviz.load stays the trace loader, and install_as_torch() maps
# torch.load to gradviz.serialization.load.
from gradviz import func, optim, serialization, sparse, utils  # noqa: E402 - sparse: torch.sparse

# --- gradviz standing in for torch: install_as_torch() (gradviz/_as_torch.py) ----------------
from gradviz._as_torch import as_torch, install_as_torch, uninstall_as_torch  # noqa: E402
from gradviz.device import get_default_device, set_default_device  # noqa: E402
from gradviz.func import vmap  # noqa: E402 - torch.vmap is torch.func.vmap
from gradviz.serialization import save  # noqa: E402

# isort: split
# --- torch's top-level names for nn ops: torch.conv2d is torch.nn.functional.conv2d's op, and so on --
from gradviz.nn.functional import (  # noqa: E402
    bilinear,
    celu,
    celu_,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    cosine_similarity,
    hardshrink,
    pairwise_distance,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    selu,
    selu_,
    threshold,
    threshold_,
)

# isort: split
# --- torch's top-level names for the nn ops of issue 34 (nn.utils / missing nn modules) ---------
from gradviz.nn.functional import (  # noqa: E402
    adaptive_avg_pool1d,
    alpha_dropout,
    avg_pool1d,
    conv3d,
    conv_tbc,
    conv_transpose3d,
    feature_alpha_dropout,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool3d,
    pdist,
    rms_norm,
    rrelu,
    rrelu_,
)
from gradviz.nn.functional import adaptive_max_pool1d_with_indices as adaptive_max_pool1d  # noqa: E402
from gradviz.ops.nn_weight_norm_ops import norm_except_dim  # noqa: E402

# isort: split
from gradviz import fft  # noqa: E402 - torch.fft (issue 34, torchfns)
from gradviz._torch_nn_forms import *  # noqa: E402, F403 - torch.layer_norm, torch.embedding, ... (issue 34)
from gradviz._torch_nn_forms import install_methods as _install_nn_methods  # noqa: E402

_install_nn_methods()

# isort: split
# --- coverage2 (issue 34): the rest of torch's top-level names and Tensor members: process-wide state
# (autocast, anomaly, print options, default tensor type), sym_*, exception classes, storages, memory
# formats, streams, futures, aten spellings of nn ops (torch.dropout, torch.kl_div, ...), constructors
# (range, empty_strided, frombuffer, from_file...) and memory members (as_strided, resize_, set_, new...).
from gradviz._autocast_state import *  # noqa: E402, F403 - set_autocast_enabled, get_autocast_cpu_dtype, ...
from gradviz._construction_more import *  # noqa: E402, F403, A004 - range, empty_strided, frombuffer, ...
from gradviz._exceptions import *  # noqa: E402, F403 - OutOfMemoryError, AcceleratorError, ...
from gradviz._futures import Future, fork, wait  # noqa: E402
from gradviz._memory_format import *  # noqa: E402, F403 - memory_format, contiguous_format, channels_last...
from gradviz._memory_format import install as _install_memory_format  # noqa: E402
from gradviz._missing import name_missing_members as _name_missing_members  # noqa: E402
from gradviz._nn_top_level import *  # noqa: E402, F403 - dropout, batch_norm, kl_div, lstm_cell, ...
from gradviz._printoptions import set_printoptions  # noqa: E402
from gradviz._process_switches import *  # noqa: E402, F403 - is_distributed, set_anomaly_enabled, ...
from gradviz._storage import *  # noqa: E402, F403 - UntypedStorage, TypedStorage, FloatStorage...
from gradviz._storage import install as _install_storage  # noqa: E402
from gradviz._stream import Event, Stream  # noqa: E402
from gradviz._sym import *  # noqa: E402, F403 - sym_int, sym_max, ...
from gradviz._torch_tensor_names import TENSOR_NAMES as _TENSOR_NAMES  # noqa: E402
from gradviz.amp import GradScaler  # noqa: E402 - torch.GradScaler is torch.amp.GradScaler
from gradviz.autograd import is_anomaly_check_nan_enabled  # noqa: E402
from gradviz.ops.alpha_dropout import *  # noqa: E402, F403 - alpha_dropout, feature_alpha_dropout (+ in place)
from gradviz.ops.as_strided import as_strided  # noqa: E402
from gradviz.ops.channel_shuffle import channel_shuffle, native_channel_shuffle  # noqa: E402
from gradviz.ops.fill import fill  # noqa: E402
from gradviz.ops.native_dropout import native_dropout  # noqa: E402
from gradviz.ops.out_variants import *  # noqa: E402, F403 - out= on add, mul, maximum, ... (torch's out= writes)
from gradviz.ops.split_variants import *  # noqa: E402, F403 - split_with_sizes, unsafe_split, ...
from gradviz.ops.split_variants import install as _install_split_variants  # noqa: E402
from gradviz.ops.tensor_memory_methods import install as _install_memory_methods  # noqa: E402
from gradviz.ops.tensor_memory_methods import resize_as_  # noqa: E402
from gradviz.ops.tensor_resize_deprecated import install as _install_resize_deprecated  # noqa: E402

Tensor.as_strided = as_strided  # type: ignore[method-assign] - torch.Tensor.as_strided
detach = Tensor.detach  # torch.detach(t), torch.detach_(t): the methods as functions
detach_ = Tensor.detach_
for _install in (_install_memory_methods, _install_split_variants, _install_storage, _install_memory_format,
                 _install_resize_deprecated):
    _install()
# last: each torch.Tensor member still missing raises the one line naming it
_name_missing_members(Tensor, _TENSOR_NAMES)
