// Rung 1: one element per thread, a block sum by warp shuffles and shared memory, then the
// last block adds the blocks' sums. Simple, but it launches n / 256 blocks, and each does a
// full reduction for 256 floats.
#include "reduce.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void sum_two_level(const float* x, float* partials, unsigned int* counter,
                                         float* total, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    finish(block_sum(v), partials, counter, total);
}
// --8<-- [end:kernel]
