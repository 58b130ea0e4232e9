"""torch.backends.cpu."""


def get_cpu_capability() -> str:
    """gradviz computes with numpy, whatever the CPU: no torch vector kernels to pick."""
    return "DEFAULT"
