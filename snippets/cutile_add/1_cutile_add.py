"""The vector add in cuTile, NVIDIA's tile-based Python DSL: the kernel names whole tiles, and
the compiler (tileiras, through Tile IR) decides what each thread does."""

import cuda.tile as ct
import torch

from labnotebook import Unavailable

TILE = 1024


# --8<-- [start:kernel]
@ct.kernel
def add_kernel(a, b, c, tile: ct.Constant[int]):
    pid = ct.bid(0)                                  # this block's tile of the arrays
    ta = ct.load(a, index=(pid,), shape=(tile,))     # no per-thread index, no guard: a tile
    tb = ct.load(b, index=(pid,), shape=(tile,))     # past the end is padded on load ...
    ct.store(c, index=(pid,), tile=ta + tb)          # ... and clipped on store
# --8<-- [end:kernel]


# --8<-- [start:launch]
def prepare(case, inputs, outputs):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    grid = (ct.cdiv(case.n, TILE), 1, 1)

    def go():
        ct.launch(torch.cuda.current_stream(), grid, add_kernel, (a, b, c, TILE))

    try:
        go()  # the first launch compiles: cuTile's front end, then tileiras for this GPU
    except FileNotFoundError as e:  # cuTile is installed but its assembler is not
        raise Unavailable(f"requires tileiras (pip install 'cuda-tile[tileiras]'): {e}") from e
    except ct.TileCompilerExecutionError as e:  # tileiras could not build it for this GPU
        raise Unavailable(f"tileiras failed (it needs the ptxas and libnvvm of its own release): {e}") from e
    return go
# --8<-- [end:launch]
