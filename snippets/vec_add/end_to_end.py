"""The whole vector-add program, as a standalone script would run it, phase by phase.

The engine runs ``main`` in a fresh Python process ten times; ``phase`` times each step on the
host clock and marks it as an NVTX range (``nsys profile`` shows the same steps).
"""

import numpy as np


# --8<-- [start:program]
def main(case, inputs, phase, cubins):
    with phase("import PyCUDA"):
        import pycuda.driver as cuda
    with phase("create context"):
        cuda.init()
        context = cuda.Device(0).make_context()
    with phase("load module"):
        add = cuda.module_from_file(str(cubins / "1_add.cubin")).get_function("vec_add")
    with phase("allocate"):
        a, b, c = (cuda.mem_alloc(inputs["a"].nbytes) for _ in range(3))
    with phase("host → device"):
        cuda.memcpy_htod(a, inputs["a"])
        cuda.memcpy_htod(b, inputs["b"])
    with phase("kernel"):
        add(a, b, c, np.int32(case.n), grid=((case.n + 255) // 256, 1, 1), block=(256, 1, 1))
        context.synchronize()
    with phase("device → host"):
        out = np.empty_like(inputs["a"])
        cuda.memcpy_dtoh(out, c)
    with phase("free"):
        for buf in (a, b, c):
            buf.free()
    with phase("destroy context"):
        context.pop()
        context.detach()
    return {"c": out}
# --8<-- [end:program]
