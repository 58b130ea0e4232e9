"""torch's top-level exception classes and its torch-function switches.

gradviz raises none of these errors itself (it has no accelerator, no JIT); programs name them in
``except`` clauses, so they exist with torch's bases. gradviz has no ``__torch_function__``
dispatch, so the two DisableTorchFunction context managers have nothing to disable.
"""

from __future__ import annotations

__all__ = ["AcceleratorError", "DisableTorchFunction", "DisableTorchFunctionSubclass", "FatalError", "JITException",
           "OutOfMemoryError"]


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (torch.cuda.OutOfMemoryError): an allocator ran out of device memory."""


class AcceleratorError(RuntimeError):
    """torch.AcceleratorError: an accelerator reported an error."""


class FatalError(Exception):
    """torch.FatalError."""


class JITException(Exception):
    """torch.JITException (torch.jit.Error): raised by TorchScript's ``raise``."""


JITException.__name__ = JITException.__qualname__ = "Error"  # torch's class is named Error (torch.jit.Error)


class DisableTorchFunction:
    """Context manager that turns __torch_function__ dispatch off; gradviz dispatches none."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class DisableTorchFunctionSubclass:
    """Like DisableTorchFunction, for subclasses' __torch_function__ only."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
