// Rung 5: rung 4 with its bug fixed. A float maximum through integer atomics must respect the
// sign: non-negative floats order like signed ints (atomicMax), negative floats order backwards
// like unsigned ints (atomicMin). Everything else is unchanged.
#include "reduce.cuh"

#define THREADS 256

// --8<-- [start:fix]
__device__ __forceinline__ void atomic_max_float(float* address, float value)
{
    if (value >= 0.0f) {
        atomicMax(reinterpret_cast<int*>(address), __float_as_int(value));
    } else {
        atomicMin(reinterpret_cast<unsigned int*>(address), __float_as_uint(value));
    }
}
// --8<-- [end:fix]

extern "C" __global__ void softmax_atomicmax_fixed(const float* x, float* y, int rows, int cols)
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
    if (threadIdx.x % 32 == 0) atomic_max_float(&row_max, m);
    __syncthreads();
    m = row_max;

    float d = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) d += expf(in[j] - m);
    d = warp_sum(d);
    if (threadIdx.x % 32 == 0) atomicAdd(&row_sum, d);
    __syncthreads();

    for (int j = threadIdx.x; j < cols; j += THREADS) out[j] = expf(in[j] - m) / row_sum;
}
