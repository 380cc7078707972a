"""What a CUDA kernel needs of a GPU, and which GPUs it claims: read from the kernel's own file.

A kernel file declares the oldest architecture it builds for on a line of its own, beside the
code that needs it, as LLVM's tests declare ``REQUIRES:``::

    // needs: sm_80 (cp.async)
    // needs: sm_90 (thread-block clusters)
    // needs: sm_90a (wgmma, setmaxnreg)

``sm_XY`` is compute capability X.Y or newer; ``sm_XYa`` is X.Y alone (its instructions exist on
that architecture only, and the kernel is compiled for it: ``-arch=sm_90a``). A file without the
line claims every architecture from ``FLOOR`` on. The engine declares a kernel unavailable,
with this reason, on a GPU that does not meet it (``Runner``), and the compile test builds every
kernel for every architecture of ``ARCHITECTURES`` it claims. Nothing here decides a number:
these lines are no part of a result's key (a kernel's machine code is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..declare.experiment import Experiment, Kernel

# The architectures the notebook claims, oldest first: one of each family a reader may have
# (Turing, Ampere's data-centre and consumer parts, Ada, Hopper, Blackwell's two). Compiled in CI.
ARCHITECTURES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
FLOOR = ARCHITECTURES[0]

# Shared memory a block may opt into, in bytes, by compute capability (the CUDA C++ Programming
# Guide's table of technical specifications). The largest is the most any GPU gives: a launch
# asking for more is wrong everywhere, not unavailable somewhere.
SHARED_PER_BLOCK = {(7, 5): 64 * 1024, (8, 0): 163 * 1024, (8, 6): 99 * 1024, (8, 7): 163 * 1024,
                    (8, 9): 99 * 1024, (9, 0): 227 * 1024, (10, 0): 227 * 1024, (10, 3): 227 * 1024,
                    (12, 0): 99 * 1024, (12, 1): 99 * 1024}
MOST_SHARED_PER_BLOCK = max(SHARED_PER_BLOCK.values())

_LINE = re.compile(r"^\s*//\s*needs:(.*)$", re.MULTILINE)
_NEEDS = re.compile(r"\s*(sm_\d+a?)\s*(?:\((.*)\))?\s*")
_ARCH = re.compile(r"^sm_(\d+)(\d)(a?)$")


class BadNeeds(ValueError):
    """A ``needs:`` line that names no architecture the notebook knows, or two such lines."""


def capability(arch: str) -> tuple[int, int]:
    """``"sm_86"`` (or ``"sm_90a"``, ``"compute_86"``) -> ``(8, 6)``."""
    m = _ARCH.match(arch.replace("compute_", "sm_"))
    if not m:
        raise BadNeeds(f"{arch!r} is not an architecture (sm_75, sm_90a, ...)")
    return int(m[1]), int(m[2])


def parsed(text: str) -> tuple[int, int]:
    """``"8.6"``, a compute capability as nvidia-smi, the results and ``--arch`` write it -> ``(8, 6)``."""
    major, dot, minor = text.partition(".")
    if not (dot and major.isdigit() and minor.isdigit()):
        raise BadNeeds(f"{text!r} is not a compute capability (7.5, 8.6, ...)")
    return int(major), int(minor)


def arch_of(cc: tuple[int, int]) -> str:
    """``(8, 6)`` -> ``"sm_86"``."""
    return f"sm_{cc[0]}{cc[1]}"


@dataclass(frozen=True)
class Needs:
    """The oldest architecture a kernel builds for (``arch``), whether it builds for that one
    alone (``exact``: ``sm_90a``), and why, in the words of its ``needs:`` line."""

    arch: str = FLOOR
    why: str = ""

    @property
    def exact(self) -> bool:
        return self.arch.endswith("a")

    @property
    def capability(self) -> tuple[int, int]:
        return capability(self.arch)

    def unmet(self, cc: tuple[int, int]) -> str | None:
        """Why a GPU of compute capability ``cc`` cannot run the kernel, or None."""
        want = "{}.{}".format(*self.capability)
        if self.exact and cc != self.capability:
            need = f"compute capability {want} exactly ({self.arch})"
        elif not self.exact and cc < self.capability:
            need = f"compute capability {want} or newer"
        else:
            return None
        because = f": {self.why}" if self.why else ""
        return f"needs {need}{because}; this GPU is {cc[0]}.{cc[1]}"

    def claims(self) -> list[str]:
        """The architectures of ``ARCHITECTURES`` the kernel claims to build for (an exact one: itself)."""
        if self.exact:
            return [self.arch]
        return [a for a in ARCHITECTURES if capability(a) >= self.capability]


def declared(text: str) -> Needs:
    """The ``needs:`` line of a kernel file's text (``Needs()`` without one)."""
    found = _LINE.findall(text)
    if len(found) > 1:
        raise BadNeeds(f"{len(found)} 'needs:' lines; a kernel declares one")
    if not found:
        return Needs()
    m = _NEEDS.fullmatch(found[0])
    if not m:
        raise BadNeeds(f"'needs:{found[0]}': write it as 'needs: sm_80 (why)'")
    arch, why = m[1], m[2] or ""
    if capability(arch) < capability(FLOOR):
        raise BadNeeds(f"needs: {arch} is older than the oldest architecture the notebook claims ({FLOOR})")
    return Needs(arch, why.strip())


def needs_of(source: Path) -> Needs:
    return declared(source.read_text(errors="replace"))


def shared_per_block(cc: tuple[int, int]) -> int | None:
    """The shared memory a block of a GPU of compute capability ``cc`` may have, where known."""
    return SHARED_PER_BLOCK.get(tuple(cc))


@dataclass(frozen=True)
class Target:
    """What a run compiles for and judges its kernels by: the GPU at hand (``sm_90``), or an
    older architecture run on it (``compute_86``: its PTX, which the driver compiles for the GPU,
    and no more shared memory a block than that architecture gives)."""

    capability: tuple[int, int]
    arch: str
    max_shared: int

    @property
    def emulated(self) -> bool:
        return self.arch.startswith("compute_")

    @classmethod
    def of(cls, real: tuple[int, int], real_shared: int, emulate: tuple[int, int] | None = None) -> Target:
        if emulate is None:
            return cls(tuple(real), arch_of(real), real_shared)
        if tuple(emulate) > tuple(real):
            raise BadNeeds("cannot run as compute capability {}.{} on a GPU of {}.{}: its PTX needs a GPU "
                           "at least as new".format(*emulate, *real))
        return cls(tuple(emulate), "compute_{}{}".format(*emulate),
                   min(real_shared, shared_per_block(emulate) or real_shared))


def unavailable_kernels(exp: Experiment, folder: Path, target: Target) -> dict[str, dict]:
    """The kernels of ``exp`` that ``target`` cannot run, by name, each with the fields of its rows
    (skipped, unavailable, and why): a CUDA kernel whose ``needs:`` line it does not meet and, on
    an emulated architecture, a Python-DSL kernel (Triton and cuTile compile for the GPU they run
    on, never as another)."""
    out = {}
    for k in exp.kernels:
        why = None
        if isinstance(k, Kernel):
            try:
                why = needs_of(folder / k.source).unmet(target.capability)
            except BadNeeds as e:
                raise BadNeeds(f"{k.source}: {e}") from None
            except OSError:  # no such file: nvcc says so, by name
                pass
        elif target.emulated:
            why = f"{k.source} compiles for the GPU it runs on: it cannot run as compute capability " \
                  "{}.{}".format(*target.capability)
        if why:
            out[k.name] = {"status": "skipped", "unavailable": True, "error": why}
    return out
