// Dynamic shared memory: the same tile, but its size comes from the launch (the third launch
// parameter, here Launch.shared_bytes) instead of the source.
#include "common.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void mirror_poly_shared_dynamic(const float* x, float* y, long long n)
{
    extern __shared__ float tile[];  // blockDim.x floats, sized at launch
    long long start = blockIdx.x * (long long)TILE;
    long long i = start + threadIdx.x;
    int length = tile_length(start, n);
    if (threadIdx.x < length) {
        tile[threadIdx.x] = x[i];
    }
    __syncthreads();
    if (threadIdx.x < length) {
        float v = tile[length - 1 - threadIdx.x];
        y[i] = 1.0f + v * (0.5f + v * (0.25f + v * 0.125f));
    }
}
// --8<-- [end:kernel]
