// The same add over a (nz, ny, nx) array with 16 x 8 x 8 = 1024-thread blocks: each thread
// finds its (x, y, z) and flattens it, x fastest so that a warp still reads consecutive floats.
// The flat index is 64-bit, widened before the multiplies: nx * ny * nz can pass 2^31 - 1
// (and so can x, in the last block of a row of nearly 2^31).

// --8<-- [start:kernel]
extern "C" __global__ void add_3d(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int nx, int ny, int nz)
{
    long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        size_t i = ((size_t)z * ny + y) * nx + x;
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
