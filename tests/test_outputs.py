"""The outputs' digest and their copy to the host on demand (``labnotebook/run/outputs.py``).

The digest's arithmetic is int64 with masks standing in for unsigned shifts; a plain Python
version with unbounded integers says what it must compute. The GPU's version of it is checked
against this one in ``test_gpu.py``."""

import hashlib

import numpy as np
import pytest

from labnotebook.run import outputs as out
from labnotebook.run.outputs import Outputs, fingerprint_host

MASK = (1 << 64) - 1


def reference_fingerprint(data: bytes) -> tuple[int, int]:
    """SplitMix64's finaliser over each little-endian word plus (position + 1) * golden, summed mod 2^64."""
    padded = data + bytes(-len(data) % 8)
    total = 0
    for i in range(len(padded) // 8):
        x = (int.from_bytes(padded[8 * i:8 * i + 8], "little") + (i + 1) * 0x9E3779B97F4A7C15) & MASK
        x ^= x >> 30
        x = (x * 0xBF58476D1CE4E5B9) & MASK
        x ^= x >> 27
        x = (x * 0x94D049BB133111EB) & MASK
        x ^= x >> 31
        total = (total + x) & MASK
    return len(data), total


@pytest.mark.parametrize("dtype, n", [(np.float32, 1), (np.float32, 7), (np.float64, 33), (np.float16, 5),
                                      (np.uint8, 13), (np.int32, 0), (bool, 3)])
def test_fingerprint_is_the_plain_arithmetic(dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 1e3).astype(dtype)
    a.reshape(-1).view(np.uint8)[:] |= rng.integers(0, 256, a.nbytes, dtype=np.uint8) & 0x80  # sign bits too
    assert fingerprint_host(a) == reference_fingerprint(a.tobytes())


def test_fingerprint_does_not_depend_on_the_chunks(monkeypatch):
    a = np.random.default_rng(0).standard_normal(1001).astype(np.float32)  # 500 words and a tail
    whole = fingerprint_host(a)
    monkeypatch.setattr(out, "HOST_CHUNK", 64)  # eight chunks in a thread pool
    assert fingerprint_host(a) == whole == reference_fingerprint(a.tobytes())


def test_any_change_changes_the_digest():
    a = np.random.default_rng(1).standard_normal((16, 9)).astype(np.float32)
    base = Outputs(["y"], host={"y": a}).digest()
    for flat in (0, 71, a.size - 1):  # the first word, the middle, the zero-padded tail
        b = a.copy()
        b.reshape(-1).view(np.uint32)[flat] ^= 1  # the lowest bit of one element
        assert Outputs(["y"], host={"y": b}).digest() != base
    swapped = a.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert Outputs(["y"], host={"y": swapped}).digest() != base
    longer = np.append(a.reshape(-1), np.float32(0))
    assert Outputs(["y"], host={"y": longer}).digest() != base  # same sum, one more zero word
    assert Outputs(["y"], host={"y": a.copy()}).digest() == base
    assert Outputs(["z"], host={"z": a}).digest() != base  # the name is part of it


def test_digest_of_several_outputs_is_in_name_order():
    y, z = np.arange(5, dtype=np.float32), np.ones(3, np.float64)
    h = hashlib.sha256()
    for name, a in (("y", y), ("z", z)):
        size, total = reference_fingerprint(a.tobytes())
        h.update(f"{name}\0{size}\0{total:016x}\0".encode())
    assert Outputs(["z", "y"], host={"y": y, "z": z}).digest() == h.hexdigest()[:16]


def test_outputs_on_the_device_are_copied_once_and_only_when_read():
    copied = []
    host = {"y": np.zeros(4, np.float32)}

    def copy(name):
        copied.append(name)
        host[name][:] = 7
        return host[name]
    outputs = Outputs(["y"], device={"y": None}, copy=copy)
    assert list(outputs) == ["y"] and len(outputs) == 1 and copied == []
    assert outputs.on_gpu("y") is None  # a None view is no view
    assert (outputs["y"] == 7).all() and (outputs["y"] == 7).all()
    assert copied == ["y"]
    with pytest.raises(KeyError):
        outputs["z"]


class Widened:
    """What attention's SDPA baselines return: an fp16 result that stands for its float32 widening."""
    is_cuda = True

    def __init__(self, values: np.ndarray):
        self.values, self.widened = values, 0

    def numel(self):
        return self.values.size

    def detach(self):
        self.widened += 1
        return FakeTensor(self.values.astype(np.float32))


class FakeTensor:
    is_cuda = True

    def __init__(self, values):
        self.values = values

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.values


def test_a_returned_output_that_stands_for_a_gpu_tensor_is_checked_there_and_read_through_detach(fake_gpu):
    """The check of a large output returned by a library runs on the GPU, on what ``detach()``
    gives (SDPA's fp16 result widened there), not on a copy to the host; read on the host, it is
    that tensor's copy."""
    from labnotebook.run.case_arrays import CaseArrays
    from labnotebook.run.protocol.verify import GPU_CHECK_MIN

    big, small = Widened(np.ones(GPU_CHECK_MIN, np.float16)), Widened(np.ones(3, np.float16))
    outputs = CaseArrays(fake_gpu, {}).fetch("gpu", {"big": big, "small": small}, on_gpu=True)
    assert isinstance(outputs.on_gpu("big"), FakeTensor) and outputs.on_gpu("small") is None and big.widened == 1
    assert outputs["small"].dtype == np.float32 and outputs["small"].tolist() == [1.0] * 3


def test_a_kernel_that_writes_its_own_output_type_gets_a_poisoned_buffer_and_returns_it(fake_gpu):
    """TypedOutputKernel.outputs (rung 7 of matmul_fp16 writes C in fp16): a buffer of that type and the
    output's shape, every byte poisoned (NaN in fp16), which each launch returns for verification
    instead of the experiment's own buffer; a plain kernel's launch returns nothing."""
    from pycuda import gpuarray

    from labnotebook.declare.experiment import Launch
    from labnotebook.run.case_arrays import poisoned
    from labnotebook.run.launch import cuda_launch

    fp32 = gpuarray.empty((3, 5), np.float32)
    own = poisoned(fp32, np.float16)
    assert own.shape == (3, 5) and own.dtype == np.float16 and np.isnan(own.get()).all()
    assert (own.get().view(np.uint8) == 0xFF).all()
    calls = []

    def function(*args, **geometry):
        calls.append(args)
    launch = Launch(grid=(1,), block=(32,), args=("c",))
    go = cuda_launch(fake_gpu, function, "rung", launch, {"c": own.gpudata}, None, returns={"c": own})
    assert go() == {"c": own} and calls == [(own.gpudata,)]
    assert cuda_launch(fake_gpu, function, "rung", launch, {"c": fp32.gpudata}, None)() is None


def test_a_bf16_output_is_poisoned_bits_read_back_widened_exactly(fake_gpu):
    """BF16 (attention's rung 7 writes O in bf16 where the input is bf16): an int16 buffer of the
    output's shape, every byte poisoned (NaN in bf16 too), which a launch names by its device
    memory and which is read back as float32 holding each bf16 value exactly."""
    from pycuda import gpuarray

    from labnotebook.declare.typed_output import BF16
    from labnotebook.run.case_arrays import Bfloat16Bits, as_numpy, poisoned

    own = poisoned(gpuarray.empty((2, 3), np.float32), BF16)
    assert isinstance(own, Bfloat16Bits) and own.bits.dtype == np.int16 and own.bits.shape == (2, 3)
    assert own.gpudata is own.bits.gpudata and own.numel() == 6
    assert np.isnan(as_numpy(own)).all()
    values = np.array([[1.0, -2.5, 3.140625], [65280.0, 2.0**-130, -0.0]], np.float32)  # each a bf16 value
    fake_gpu.memcpy_htod(own.gpudata, (values.view(np.uint32) >> 16).astype(np.uint16).view(np.int16))
    got = as_numpy(own)
    assert got.dtype == np.float32 and got.tobytes() == values.tobytes()
