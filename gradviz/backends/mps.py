"""torch.backends.mps: gradviz has no Metal backend."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
