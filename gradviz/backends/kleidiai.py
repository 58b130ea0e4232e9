"""torch.backends.kleidiai: Arm's KleidiAI kernels; gradviz has none."""


def is_available() -> bool:
    return False
