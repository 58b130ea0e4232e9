"""torch.nn's modules, one file per family."""

from gradviz.nn.modules.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from gradviz.nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from gradviz.nn.modules.conv import Conv1d, Conv2d
from gradviz.nn.modules.conv_transpose import ConvTranspose1d, ConvTranspose2d
from gradviz.nn.modules.distance import CosineSimilarity, PairwiseDistance
from gradviz.nn.modules.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from gradviz.nn.modules.flatten import Flatten, Unflatten
from gradviz.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from gradviz.nn.modules.linear import Bilinear, Identity, Linear
from gradviz.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from gradviz.nn.modules.module import Module
from gradviz.nn.modules.normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from gradviz.nn.modules.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from gradviz.nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle
from gradviz.nn.modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool1d, MaxPool2d
from gradviz.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from gradviz.nn.modules.sparse import Embedding
from gradviz.nn.modules.transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from gradviz.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "GELU", "AdaptiveAvgPool2d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d",
    "Bilinear", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "HuberLoss", "Identity",
    "KLDivLoss", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool1d", "MaxPool2d",
    "Module", "ModuleDict", "ModuleList", "NLLLoss", "ParameterDict", "ParameterList", "ReLU", "Sequential", "SiLU",
    "Sigmoid", "SmoothL1Loss", "Softmax", "Tanh", "Unflatten", "GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell",
    "MultiheadAttention", "Transformer", "TransformerDecoder", "Dropout1d", "Dropout2d", "Dropout3d",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "ConvTranspose1d", "ConvTranspose2d", "PixelShuffle", "PixelUnshuffle",
    "ELU",
    "ConstantPad1d", "ConstantPad2d", "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
    "ReplicationPad2d", "CosineSimilarity", "PairwiseDistance", "GroupNorm",
    "CELU", "GLU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "PReLU", "ReLU6",
    "Softmin", "Softplus", "Softsign", "Tanhshrink", "Threshold",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss", "MultiLabelSoftMarginLoss",
    "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss", "Hardshrink", "Softshrink", "Softmax2d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d",
    "ZeroPad1d", "ZeroPad3d",
]

# isort: split
# -- issue 34: the modules torch.nn has that were missing (pooling in 1-3 dims, fold, norms, dropouts, losses) --
from gradviz.nn.modules.activation import RReLU  # noqa: E402
from gradviz.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from gradviz.nn.modules.channelshuffle import ChannelShuffle  # noqa: E402
from gradviz.nn.modules.container import Container  # noqa: E402
from gradviz.nn.modules.conv import Conv3d  # noqa: E402
from gradviz.nn.modules.conv_transpose import ConvTranspose3d  # noqa: E402
from gradviz.nn.modules.dropout import AlphaDropout, FeatureAlphaDropout  # noqa: E402
from gradviz.nn.modules.fold import Fold, Unfold  # noqa: E402
from gradviz.nn.modules.lazy import (  # noqa: E402
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from gradviz.nn.modules.loss import (  # noqa: E402
    CTCLoss,
    LinearCrossEntropyLoss,
    MultiLabelMarginLoss,
    MultiMarginLoss,
    NLLLoss2d,
    TripletMarginWithDistanceLoss,
)
from gradviz.nn.modules.normalization import (  # noqa: E402
    BatchNorm3d,
    CrossMapLRN2d,
    LocalResponseNorm,
    RMSNorm,
    SyncBatchNorm,
)
from gradviz.nn.modules.pooling import (  # noqa: E402
    AdaptiveAvgPool1d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool3d,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from gradviz.nn.modules.rnn import RNNBase, RNNCellBase  # noqa: E402
from gradviz.nn.modules.sparse import EmbeddingBag  # noqa: E402

__all__ += [
    "RReLU", "ChannelShuffle", "Container", "AlphaDropout", "FeatureAlphaDropout", "Fold", "Unfold",
    "MultiLabelMarginLoss", "MultiMarginLoss", "NLLLoss2d", "TripletMarginWithDistanceLoss", "BatchNorm3d",
    "LocalResponseNorm", "RMSNorm", "SyncBatchNorm", "AdaptiveAvgPool1d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
    "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "RNNBase", "RNNCellBase", "Conv3d", "ConvTranspose3d",
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LazyLinear", "EmbeddingBag", "FractionalMaxPool2d", "FractionalMaxPool3d", "CTCLoss",
    "LinearCrossEntropyLoss", "CrossMapLRN2d", "AdaptiveLogSoftmaxWithLoss",
]

# torch.nn.modules' submodules that programs name by path (torch.nn.modules.batchnorm._BatchNorm,
# torch.nn.modules.utils._pair): loaded with the package, as torch's are
from gradviz.nn.modules import batchnorm, utils  # noqa: E402, F401
