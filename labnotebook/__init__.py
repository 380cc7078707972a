"""A CUDA lab notebook that proves its own numbers.

Experiments import their declaration API from here; nothing in this package touches a GPU
until ``labnotebook.run.device.open_context`` is called by a worker process.
"""

from .declare.experiment import (Baseline, Case, Experiment, Headline, Kernel, Launch, PhaseProgram, PythonKernel,
                                 Tolerance, Unavailable, Unsupported, cdiv, sizes)

__all__ = ["Baseline", "Case", "Experiment", "Headline", "Kernel", "Launch", "PhaseProgram", "PythonKernel", "Tolerance",
           "Unavailable", "Unsupported", "cdiv", "sizes"]
