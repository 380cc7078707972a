"""A CUDA rung that writes an output in a type of its own (matmul_fp16's rung 7 writes C in fp16
where the experiment's C is fp32; attention's rung 7 writes O in the input type, fp16 or bf16,
case by case). Its own module, so that declaring one stales only the experiments that do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Union

from .experiment import Case, Kernel

# bfloat16, which NumPy lacks: the kernel writes its 16-bit patterns into an int16 buffer
# (all-ones, the poison, is a NaN there too), and the engine widens them to float32, exactly,
# before verifying them.
BF16 = "bf16"

OutputTypes = Mapping[str, Union[type, str]]  # output name -> a NumPy type, or BF16


@dataclass(frozen=True)
class TypedOutputKernel(Kernel):
    """A ``Kernel`` whose ``outputs`` (``{"c": np.float16}``, or a function of the case that
    gives them) each get a buffer of that type and the experiment's output's shape, poisoned as
    every output is, which its launch names in place of the experiment's and which is then
    verified, with the kernel's own ``tolerance``."""

    outputs: OutputTypes | Callable[[Case], OutputTypes] = field(default_factory=dict)

    def outputs_at(self, case: Case) -> OutputTypes:
        """The output types at ``case``."""
        return self.outputs(case) if callable(self.outputs) else self.outputs
