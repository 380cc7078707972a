// Rungs 4 and 5: the walkthrough's kernel, a block per row. Warp shuffles reduce within each
// warp; the warps' maxima and sums meet through atomics in shared memory. The rungs differ only
// in the atomic that takes a float maximum (AtomicMax): rung 4's is the walkthrough's, rung 5's
// is fixed.
#pragma once
#include "reduce.cuh"

#define THREADS 256

// --8<-- [start:kernel]
template <void (*AtomicMax)(float*, float)>
__device__ __forceinline__ void softmax_atomic(const float* x, float* y, int cols)
{
    __shared__ float row_max;
    __shared__ float row_sum;
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    if (threadIdx.x == 0) {
        row_max = -INFINITY;
        row_sum = 0.0f;
    }
    __syncthreads();

    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, in[j]);
    m = warp_max(m);
    if (threadIdx.x % 32 == 0) AtomicMax(&row_max, m);
    __syncthreads();
    m = row_max;

    float d = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) d += expf(in[j] - m);
    d = warp_sum(d);
    if (threadIdx.x % 32 == 0) atomicAdd(&row_sum, d);
    __syncthreads();

    for (int j = threadIdx.x; j < cols; j += THREADS) out[j] = expf(in[j] - m) / row_sum;
}
// --8<-- [end:kernel]
