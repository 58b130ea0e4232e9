"""torch.backends.openmp: gradviz calls no openmp kernels of its own (numpy's are its business)."""


def is_available() -> bool:
    return False
