"""One case's arrays: its inputs and outputs on the host, on the device (uploaded once), and as
each library sees that device memory; poisoning the outputs before a run and fetching them
after it."""

from __future__ import annotations

import sys
from typing import Mapping

import numpy as np

from ..declare.typed_output import BF16
from .outputs import Outputs, torch_view
from .protocol import POISON_BYTE
from .protocol.verify import GPU_CHECK_MIN, DeviceReference

GPU_HEADROOM = 4 << 30  # device memory left free beside a reference uploaded for the GPU check


def elements(value) -> int:
    return value.numel() if hasattr(value, "numel") else int(np.prod(np.shape(value)))


def as_numpy(value) -> np.ndarray:
    if isinstance(value, Bfloat16Bits):
        return value.widened()
    if hasattr(value, "detach"):  # torch tensors, on whatever device, and what stands for one
        value = value.detach().cpu().numpy()
    elif hasattr(value, "get"):  # PyCUDA GPUArrays
        value = value.get()
    return np.asarray(value)


def poison_gpu(cuda, array) -> None:
    """Every byte of a GPUArray set to ``POISON_BYTE``: an element left unwritten then fails."""
    if array.nbytes:
        cuda.memset_d8(array.gpudata, POISON_BYTE, array.nbytes)


class Bfloat16Bits:
    """A bf16 output on the GPU, written as its 16-bit patterns into an int16 GPUArray (NumPy
    has no bfloat16): its ``gpudata`` is what a launch names, and it is read widened to float32,
    which holds every bf16 value exactly (through torch's view on the GPU, for the check there,
    or by shifting the bits on the host)."""

    is_cuda = True  # read on the GPU through detach(), as a torch tensor would be

    def __init__(self, bits):
        self.bits, self.gpudata = bits, bits.gpudata

    def numel(self) -> int:
        return self.bits.size

    def detach(self):
        import torch

        return torch.as_tensor(self.bits, device="cuda").view(torch.bfloat16).float()

    def widened(self) -> np.ndarray:
        return (self.bits.get().astype(np.uint16).astype(np.uint32) << 16).view(np.float32)


def poisoned(like, dtype):
    """A GPUArray of ``like``'s shape in ``dtype`` (``BF16``: its bits, as ``Bfloat16Bits``),
    poisoned as the outputs are: for a kernel or a library call that writes an output in a type
    of its own (fp16 where the experiment's is fp32), whose element left unwritten must still fail."""
    import pycuda.driver as cuda
    from pycuda import gpuarray

    out = gpuarray.empty(like.shape, np.int16 if dtype == BF16 else dtype)
    poison_gpu(cuda, out)
    return Bfloat16Bits(out) if dtype == BF16 else out


class CaseArrays:
    """One case's inputs and outputs: on the host, on the device (uploaded once), and as each
    library sees the device memory (torch tensors are views of the same buffers, not copies)."""

    def __init__(self, cuda, inputs: dict[str, np.ndarray], host_out: dict[str, np.ndarray] | None = None):
        self.cuda, self.inputs = cuda, inputs
        self.dev_in = {k: self._alloc(v) for k, v in inputs.items()}
        self.host_out: dict[str, np.ndarray] = {}
        self.dev_out: dict = {}
        for k, v in inputs.items():
            if v.nbytes:
                cuda.memcpy_htod(self.dev_in[k].gpudata, np.ascontiguousarray(v))
        self._torch: tuple[dict, dict] | None = None
        self._reference_on_gpu: dict = {}  # output name -> its reference on the GPU, or None: no room
        self.device_reference: DeviceReference | None = None  # one computed there, freed with the case
        if host_out is not None:
            self.add_outputs(host_out)

    def _alloc(self, a: np.ndarray):  # one byte at least, so an empty array still has an address
        from pycuda import gpuarray

        return gpuarray.GPUArray(a.shape, a.dtype, gpudata=self.cuda.mem_alloc(max(a.nbytes, 1)))

    def add_outputs(self, host_out: dict[str, np.ndarray]) -> None:
        """The outputs, on the host and on the device, once their shapes are known."""
        self.host_out = host_out
        self.dev_out = {k: self._alloc(v) for k, v in host_out.items()}
        self._torch = None

    def arrays(self, library: str) -> tuple[dict, dict]:
        if library == "numpy":
            return self.inputs, self.host_out
        if library in ("pycuda", "cuda"):
            return self.dev_in, self.dev_out
        if self._torch is None:
            import torch

            def view(a):
                return torch.as_tensor(a, device="cuda") if a.size else torch.empty(a.shape, device="cuda")
            self._torch = ({k: view(v) for k, v in self.dev_in.items()},
                           {k: view(v) for k, v in self.dev_out.items()})
        return self._torch

    def reference_on_gpu(self, reference: Mapping[str, np.ndarray], name: str):
        """``reference[name]`` as a torch tensor on the GPU: where it was computed there, or
        uploaded once per case; None where that would not leave ``GPU_HEADROOM`` free."""
        if isinstance(reference, DeviceReference):
            return reference.tensors[name]
        if name not in self._reference_on_gpu:
            import torch

            want = np.ascontiguousarray(reference[name])
            free, _ = torch.cuda.mem_get_info()
            self._reference_on_gpu[name] = torch.from_numpy(want).to("cuda") \
                if want.nbytes + GPU_HEADROOM < free else None
        return self._reference_on_gpu[name]

    def poison(self, device: str) -> None:
        if device == "cpu":
            for a in self.host_out.values():
                a.view(np.uint8).fill(POISON_BYTE)
        else:
            for a in self.dev_out.values():
                poison_gpu(self.cuda, a)

    def fetch(self, device: str, returned, on_gpu: bool) -> Outputs:
        """The outputs: what the runnable returned as ``{name: array}``, else what it wrote in
        place (a library call's own return value, the out= array, is ignored). Those on the
        GPU stay there until read; with ``on_gpu``, each of ``GPU_CHECK_MIN`` elements or more
        gets a torch view there, for the check and the digest."""
        if isinstance(returned, Mapping):
            views = {k: torch_view(v) for k, v in returned.items() if on_gpu and elements(v) >= GPU_CHECK_MIN}
            return Outputs(returned, device=views, copy=lambda k: as_numpy(returned[k]))
        if device == "cpu":
            return Outputs(self.host_out, host=self.host_out)
        views = {k: self.arrays("torch")[1][k] for k, a in self.dev_out.items() if on_gpu and a.size >= GPU_CHECK_MIN}

        def copy(name: str) -> np.ndarray:
            if self.dev_out[name].nbytes:
                self.cuda.memcpy_dtoh(self.host_out[name], self.dev_out[name].gpudata)
            return self.host_out[name]
        return Outputs(self.host_out, device=views, copy=copy)

    def free(self) -> None:
        self._torch = None
        self._reference_on_gpu = {}
        if self.device_reference is not None:
            self.device_reference.release()
        if "torch" in sys.modules:  # what torch's allocator keeps, PyCUDA's next case may need
            sys.modules["torch"].cuda.empty_cache()
        for a in (*self.dev_in.values(), *self.dev_out.values()):
            try:
                a.gpudata.free()
            except self.cuda.Error:
                pass  # the context is already broken; the error that broke it is on its way up
