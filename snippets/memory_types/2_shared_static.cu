// Static shared memory: the block loads its tile in order (coalesced), waits, then each thread
// reads the mirrored element from the tile. The size is fixed at compile time.
#include "common.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void mirror_poly_shared_static(const float* x, float* y, long long n)
{
    __shared__ float tile[TILE];
    long long start = blockIdx.x * (long long)TILE;
    long long i = start + threadIdx.x;
    int length = tile_length(start, n);
    if (threadIdx.x < length) {
        tile[threadIdx.x] = x[i];
    }
    __syncthreads();  // every thread waits here, including those past the end of the array
    if (threadIdx.x < length) {
        float v = tile[length - 1 - threadIdx.x];
        y[i] = 1.0f + v * (0.5f + v * (0.25f + v * 0.125f));
    }
}
// --8<-- [end:kernel]
