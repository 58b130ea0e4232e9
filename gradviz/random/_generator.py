"""torch's CPU generator: an mt19937 with torch's seeding, state layout and normal-sample caches.

The engine is numpy's ``MT19937`` bit generator, whose raw 32-bit outputs are the same words
torch's mt19937 produces once both hold the same 624-word key and position. Seeding follows
``init_genrand`` (as torch and numpy's legacy ``RandomState`` do), computed here, since numpy's
own seeding of ``MT19937`` differs.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

_N = 624
_DEFAULT_SEED = 67280421310721  # the seed torch's default CPU generator starts with
_STATE_SIZE = 5056  # sizeof(CPUGeneratorImplState): the legacy pod plus the float normal cache
# Byte offsets inside that state (x86-64 layout of torch's CPUGeneratorImplState).
_OFF_NORMAL_Y = 5024
_OFF_NORMAL_VALID = 5040
_OFF_FLOAT_NORMAL = 5048
_OFF_FLOAT_VALID = 5052
_U64 = np.uint64


def _init_key(seed: int) -> np.ndarray:
    """mt19937's init_genrand on the low 32 bits of the seed."""
    key = np.empty(_N, dtype=np.uint32)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        key[j] = x
    return key


def _check_seed(seed: Any) -> int:
    seed = int(seed)
    if seed < -(1 << 63) or seed >= 1 << 64:
        raise ValueError("Overflow when unpacking long long")
    return seed & 0xFFFFFFFFFFFFFFFF


class Generator:
    """torch.Generator for the cpu device: ``manual_seed``, ``seed``, ``initial_seed``,
    ``get_state``/``set_state``, and the draws gradviz's random functions make from it."""

    def __init__(self, device: Any = "cpu") -> None:
        from gradviz.device import as_device

        dev = as_device(device)
        if dev.type != "cpu":
            raise RuntimeError(f"gradviz has random generators only for the cpu device, not {dev}")
        self.device = dev
        self._bits = np.random.MT19937()
        self._set_seed(_DEFAULT_SEED)

    # --- seeding ------------------------------------------------------------------------------------
    def _set_seed(self, seed: int) -> None:
        self._initial_seed = seed
        self._fresh = True  # torch's mt19937 reports next=0 until the first twist
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": _init_key(seed), "pos": _N}}
        self.next_double_normal: float | None = None
        self.next_float_normal: float | None = None

    def manual_seed(self, seed: Any) -> Generator:
        self._set_seed(_check_seed(seed))
        return self

    def seed(self) -> int:
        """A non-deterministic seed, as torch takes one from the OS, set and returned."""
        s = int.from_bytes(os.urandom(8), "little")
        self._set_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._initial_seed

    # --- draws: the words torch's random() and random64() return ------------------------------------
    def random32(self, n: int) -> np.ndarray:
        """n draws of mt19937's 32-bit output, as uint64."""
        if n <= 0:
            return np.zeros(0, dtype=_U64)
        self._fresh = False
        return self._bits.random_raw(n).astype(_U64, copy=False)

    def random64(self, n: int) -> np.ndarray:
        """n 64-bit draws: two 32-bit words each, the first one the high half (torch's random64)."""
        r = self.random32(2 * n)
        return (r[0::2] << _U64(32)) | r[1::2]

    # --- state --------------------------------------------------------------------------------------
    def get_state(self) -> Any:
        from gradviz.tensor import Tensor

        st = self._bits.state["state"]
        pos = int(st["pos"])
        buf = bytearray(_STATE_SIZE)
        nxt = 0 if self._fresh else pos
        struct.pack_into("<QiiQ", buf, 0, self._initial_seed, _N + 1 - pos, 1, nxt)
        buf[24:24 + 8 * _N] = np.asarray(st["key"], dtype="<u8").tobytes()
        if self.next_double_normal is not None:
            struct.pack_into("<d", buf, _OFF_NORMAL_Y, self.next_double_normal)
            struct.pack_into("<i", buf, _OFF_NORMAL_VALID, 1)
        if self.next_float_normal is not None:
            struct.pack_into("<f", buf, _OFF_FLOAT_NORMAL, self.next_float_normal)
            buf[_OFF_FLOAT_VALID] = 1
        # A uint8 tensor (gradviz's dtype table decides how it names one).
        return Tensor(np.frombuffer(bytes(buf), dtype=np.uint8).copy(), self.device)

    def set_state(self, new_state: Any) -> Generator:
        from gradviz.tensor import Tensor

        if not isinstance(new_state, Tensor) or (np.asarray(new_state._data).dtype != np.uint8
                                                   and getattr(new_state.dtype, "name", "") != "uint8"):
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = np.ascontiguousarray(np.asarray(new_state._data), dtype=np.uint8).tobytes()
        if len(raw) != _STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the input RNG state size to be "
                f"{len(raw)}"
            )
        seed, left, _seeded, nxt = struct.unpack_from("<QiiQ", raw, 0)
        key = np.frombuffer(raw, dtype="<u8", count=_N, offset=24).astype(np.uint32)
        pos = _N if left <= 1 else _N + 1 - left
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._initial_seed = seed
        self._fresh = nxt == 0 and left == 1
        valid = struct.unpack_from("<i", raw, _OFF_NORMAL_VALID)[0]
        self.next_double_normal = struct.unpack_from("<d", raw, _OFF_NORMAL_Y)[0] if valid else None
        fvalid = raw[_OFF_FLOAT_VALID]
        self.next_float_normal = struct.unpack_from("<f", raw, _OFF_FLOAT_NORMAL)[0] if fvalid else None
        return self

    def __repr__(self) -> str:
        return f"<gradviz.Generator object at {id(self):#x}>"


default_generator = Generator()


def resolve(generator: Generator | None) -> Generator:
    """The generator a random function draws from: the one passed, else the default."""
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a Generator, got {type(generator).__name__}")
    return generator
