"""torch.backends.mkl: gradviz calls no mkl kernels of its own (numpy's are its business)."""


def is_available() -> bool:
    return False
