"""torch.version: the torch release whose API and numbers gradviz follows, on a CPU-only build."""

__version__ = "2.13.0"
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "gradviz"
