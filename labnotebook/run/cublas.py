"""cuBLAS through ctypes: the handful of GEMM calls the notebook compares its kernels with.

cuBLAS ships with the CUDA toolkit (and with PyTorch's wheels); no binding package is needed
for three functions. The functions keep cuBLAS's own column-major argument order, so that an
experiment's host code shows exactly the call a C program would make. Pointers are device
addresses (``int(gpuarray.gpudata)``); everything runs on the default stream of the current
context, the one the engine times.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os

import numpy as np

OP = {"N": 0, "T": 1}
CUDA_R_32F, CUDA_R_16F = 0, 2
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_DEFAULT_MATH = 0  # no TF32: Sgemm rounds nothing below float32


class CublasError(RuntimeError):
    pass


def _candidates() -> list[str]:
    found = ctypes.util.find_library("cublas")
    names = [found] if found else []
    names += ["libcublas.so.13", "libcublas.so.12"]
    # The pip wheels (nvidia-cublas, PyTorch's dependency) and the toolkit's own folder.
    for site in __import__("site").getsitepackages():
        names += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "lib", "libcublas.so.*")), reverse=True)
        names += sorted(glob.glob(os.path.join(site, "nvidia", "cublas", "lib", "libcublas.so.*")), reverse=True)
    names += sorted(glob.glob("/usr/local/cuda/lib64/libcublas.so.*"), reverse=True)
    return names


@functools.cache
def library() -> ctypes.CDLL:
    errors = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
            continue
        lib.cublasGetStatusString.restype = ctypes.c_char_p
        return lib
    raise CublasError("cuBLAS not found (looked for libcublas.so.13 and .12): " + "; ".join(errors[-2:]))


def _check(status: int, call: str) -> None:
    if status != 0:
        raise CublasError(f"{call} failed: {library().cublasGetStatusString(status).decode()}")


@functools.cache
def handle() -> ctypes.c_void_p:
    """One handle per process, created in the current (primary) context."""
    h = ctypes.c_void_p()
    _check(library().cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
    _check(library().cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode")
    return h


def version() -> str:
    v = ctypes.c_int()
    _check(library().cublasGetVersion_v2(handle(), ctypes.byref(v)), "cublasGetVersion")
    return f"{v.value // 10000}.{v.value % 10000 // 100}.{v.value % 100}"


def _ptr(p) -> ctypes.c_void_p:
    return ctypes.c_void_p(int(p))


def sgemm(transa: str, transb: str, m: int, n: int, k: int, alpha: float, A, lda: int,
          B, ldb: int, beta: float, C, ldc: int) -> None:
    """``C = alpha * op(A) @ op(B) + beta * C`` in float32, column-major, as ``cublasSgemm``."""
    a, b = ctypes.c_float(alpha), ctypes.c_float(beta)
    _check(library().cublasSgemm_v2(handle(), OP[transa], OP[transb], m, n, k, ctypes.byref(a), _ptr(A), lda,
                                     _ptr(B), ldb, ctypes.byref(b), _ptr(C), ldc), "cublasSgemm")


def hgemm(transa: str, transb: str, m: int, n: int, k: int, alpha: float, A, lda: int,
          B, ldb: int, beta: float, C, ldc: int) -> None:
    """The same in half precision throughout, as ``cublasHgemm`` (fp16 inputs, output and scalars)."""
    a, b = (ctypes.c_uint16(int(np.float16(x).view(np.uint16))) for x in (alpha, beta))
    _check(library().cublasHgemm(handle(), OP[transa], OP[transb], m, n, k, ctypes.byref(a), _ptr(A), lda,
                                 _ptr(B), ldb, ctypes.byref(b), _ptr(C), ldc), "cublasHgemm")


def gemm_ex_f16_f32(transa: str, transb: str, m: int, n: int, k: int, alpha: float, A, lda: int,
                    B, ldb: int, beta: float, C, ldc: int) -> None:
    """fp16 inputs, fp32 accumulation and fp32 output, as ``cublasGemmEx`` with
    ``CUBLAS_COMPUTE_32F``: the precision of our tensor-core kernels."""
    a, b = ctypes.c_float(alpha), ctypes.c_float(beta)
    _check(library().cublasGemmEx(handle(), OP[transa], OP[transb], m, n, k, ctypes.byref(a),
                                   _ptr(A), CUDA_R_16F, lda, _ptr(B), CUDA_R_16F, ldb, ctypes.byref(b),
                                   _ptr(C), CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
           "cublasGemmEx")
