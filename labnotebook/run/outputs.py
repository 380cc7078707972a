"""A run's outputs, read where the run left them, and their digest.

An output a kernel wrote on the GPU stays there until something on the host reads it. A large
one is proved on the GPU (``protocol.verify.within_on_gpu``) and its digest is taken there too,
so the 8 GiB a kernel writes at a large case need not cross the bus and be hashed by the CPU
(two to four seconds a kernel on an H100, which was most of what the large cases cost). An
output the GPU does not prove is copied the moment the CPU's check reads it.

The digest (equal digests: identical bytes) is one function of the bytes wherever they lie:
each little-endian 64-bit word (the last one zero-padded) is offset by its position and mixed
by SplitMix64's finaliser, a bijection, and the mixed words are summed modulo 2^64. That sum
is the same in any order, so NumPy's chunks on the CPU and torch's reduction on the GPU agree to
the bit. Each output's byte count and sum, by name, are then hashed with SHA-256. It is a
fingerprint, not a cryptographic hash: two different outputs collide with a chance of about
2^-64, which is what "bit-identical" on a page needs.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Mapping

import numpy as np

from .draw import threads

CHUNK = 1 << 25  # words mixed at a time on the GPU: 256 MiB per int64 temporary
HOST_CHUNK = 1 << 21  # and on the CPU, one core each: a 64 MiB output is split eight ways
_MASK = (1 << 64) - 1


def _signed(c: int) -> int:
    """A 64-bit constant as the int64 with the same bits (both libraries multiply int64 modulo 2^64)."""
    return c - (1 << 64) if c >= 1 << 63 else c


GOLDEN, M1, M2 = (_signed(c) for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB))


def _shr(x, k: int):
    """Logical shift right of int64 words (``>>`` is arithmetic on signed integers in both libraries)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def _mixed_sum(words, positions) -> int:
    """Sum modulo 2^64 of the mixed words (int64 arrays of NumPy or torch, on any device)."""
    x = words + (positions + 1) * GOLDEN
    x ^= _shr(x, 30)
    x *= M1
    x ^= _shr(x, 27)
    x *= M2
    x ^= _shr(x, 31)
    return int(x.sum()) & _MASK


def _tail_word(tail: np.ndarray) -> np.ndarray:
    """The last bytes (fewer than 8), zero-padded to one int64 word."""
    word = np.zeros(8, np.uint8)
    word[:tail.size] = tail
    return word.view(np.int64)


def fingerprint_host(a: np.ndarray) -> tuple[int, int]:
    """``(bytes, sum)`` of a NumPy array's bytes in C order, in chunks on every core."""
    data = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    whole = data.size // 8
    words = data[:whole * 8].view(np.int64)

    def one(lo: int) -> int:
        return _mixed_sum(words[lo:lo + HOST_CHUNK], np.arange(lo, min(lo + HOST_CHUNK, whole), dtype=np.int64))
    starts = list(range(0, whole, HOST_CHUNK))
    if len(starts) > 1:
        with ThreadPoolExecutor(threads()) as pool:
            sums = list(pool.map(one, starts))
    else:
        sums = [one(lo) for lo in starts]
    if data.size % 8:
        sums.append(_mixed_sum(_tail_word(data[whole * 8:]), np.array([whole], np.int64)))
    return data.size, sum(sums) & _MASK


def fingerprint_device(t) -> tuple[int, int]:
    """``fingerprint_host`` of a torch tensor, computed where it lies (a few milliseconds for
    gigabytes on the GPU)."""
    import torch

    if t.numel() == 0:  # torch cannot view an empty tensor as another dtype
        return 0, 0
    data = t.contiguous().reshape(-1).view(torch.uint8)
    whole = data.numel() // 8
    words = data[:whole * 8].view(torch.int64)
    total = 0
    for lo in range(0, whole, CHUNK):
        hi = min(lo + CHUNK, whole)
        total += _mixed_sum(words[lo:hi], torch.arange(lo, hi, dtype=torch.int64, device=data.device))
    if data.numel() % 8:
        total += _mixed_sum(_tail_word(data[whole * 8:].cpu().numpy()), np.array([whole], np.int64))
    return data.numel(), total & _MASK


def torch_view(value):
    """A torch tensor over a GPU array's memory (a CUDA torch tensor, or what its ``detach()``
    gives, or anything with ``__cuda_array_interface__``, as PyCUDA's GPUArray), or None for
    anything else."""
    if hasattr(value, "is_cuda"):
        return value.detach() if value.is_cuda else None
    if hasattr(value, "__cuda_array_interface__"):
        import torch

        return torch.as_tensor(value, device="cuda")
    return None


class Outputs(Mapping):
    """Outputs by name, read as NumPy arrays on the host: one still on the GPU is copied
    (``copy(name)``) the first time it is read. ``on_gpu(name)`` is its torch view on the
    GPU, where the runner made one, for the check and the digest there."""

    def __init__(self, names: Iterable[str], host: Mapping[str, np.ndarray] | None = None,
                 device: Mapping[str, object] | None = None, copy: Callable[[str], np.ndarray] | None = None):
        self._names = list(names)
        self._host = dict(host or {})
        self._device = {k: v for k, v in (device or {}).items() if v is not None}
        self._copy = copy

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._host:
            if name not in self._names or self._copy is None:
                raise KeyError(name)
            self._host[name] = self._copy(name)
        return self._host[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def on_gpu(self, name: str):
        return self._device.get(name)

    def digest(self) -> str:
        """The outputs' digest (see the module's docstring), each taken where it lies."""
        h = hashlib.sha256()
        for name in sorted(self._names):
            view = self.on_gpu(name)
            size, total = fingerprint_device(view) if view is not None else fingerprint_host(self[name])
            h.update(f"{name}\0{size}\0{total:016x}\0".encode())
        return h.hexdigest()[:16]
