// out = a + b + c for a of shape (nx, ny, nz), b of shape (nx, ny) broadcast along z, and c of
// shape (nx) broadcast along y and z. The thread block's x axis walks z, the fastest-varying
// index of a, y walks y and z walks x; the block's shape decides how many consecutive floats a
// warp touches, which is what the sweep of block shapes measures. The flat index is 64-bit,
// widened before the multiplies (nx * ny * nz can pass 2^31 - 1), and so is z, which the last
// block of a row of nearly 2^31 would carry past it.

// --8<-- [start:kernel]
extern "C" __global__ void add_broadcast(const float* __restrict__ a, const float* __restrict__ b,
                                         const float* __restrict__ c, float* __restrict__ out,
                                         int nx, int ny, int nz)
{
    long long z = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int x = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        size_t i = ((size_t)x * ny + y) * nz + z;
        out[i] = a[i] + b[(size_t)x * ny + y] + c[x];
    }
}
// --8<-- [end:kernel]
