// Rung 6: one block per row; each thread folds its strided slice into an online (max, sum) pair,
// and the pairs meet in one block reduction: warp shuffles, then warp leaders through shared
// memory (reduce.cuh). Two passes over the row: the statistics, then the output.
#include "reduce.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void softmax_warp_shuffle(const float* x, float* y, int rows, int cols)
{
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    MaxSum s = {-INFINITY, 0.0f};
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s = push(s, in[j]);
    }
    s = block_reduce(s);
    float inv = 1.0f / s.d;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        out[j] = expf(in[j] - s.m) * inv;
    }
}
// --8<-- [end:kernel]
