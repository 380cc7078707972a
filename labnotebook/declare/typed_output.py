"""A CUDA rung that writes an output in a type of its own (matmul_fp16's rung 7 writes C in fp16
where the experiment's C is fp32). Its own module, so that declaring one stales only the
experiments that do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .experiment import Kernel


@dataclass(frozen=True)
class TypedOutputKernel(Kernel):
    """A ``Kernel`` whose ``outputs`` (``{"c": np.float16}``) each get a buffer of that type and
    the experiment's output's shape, poisoned as every output is, which its launch names in place
    of the experiment's and which is then verified, with the kernel's own ``tolerance``."""

    outputs: Mapping[str, type] = field(default_factory=dict)
