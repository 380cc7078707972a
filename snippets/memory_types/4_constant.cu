// Constant memory: the coefficients live in __constant__ memory, cached and broadcast to all
// threads of a warp that read the same address, as here.
#include "common.cuh"

// --8<-- [start:kernel]
__constant__ float coefficients[4] = {1.0f, 0.5f, 0.25f, 0.125f};

extern "C" __global__ void mirror_poly_constant(const float* x, float* y, long long n)
{
    long long start = blockIdx.x * (long long)TILE;
    long long i = start + threadIdx.x;
    if (i < n) {
        float v = x[start + tile_length(start, n) - 1 - threadIdx.x];
        y[i] = coefficients[0] + v * (coefficients[1] + v * (coefficients[2] + v * coefficients[3]));
    }
}
// --8<-- [end:kernel]
