// Rung 3: rung 2 with twice the bytes in flight, read as a stream. Each thread issues 8
// independent 16-byte loads before it adds any of them, and marks them evict-first
// (__ldcs: read once, never again), so the loads queue up deeper and the L2 keeps nothing.
#include "reduce.cuh"

#define UNROLL 8

// --8<-- [start:kernel]
extern "C" __global__ void sum_streaming(const float* x, float* partials, unsigned int* counter,
                                         float* total, long long n)
{
    const float4* x4 = reinterpret_cast<const float4*>(x);
    long long n4 = n / 4, stride = (long long)gridDim.x * blockDim.x;
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = __ldcs(x4 + i + u * stride);  // all loads first
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    for (; i < n4; i += stride) {
        float4 a = __ldcs(x4 + i);
        s += (a.x + a.y) + (a.z + a.w);
    }
    long long tail = 4 * n4 + blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (tail < n) s += x[tail];  // the last n % 4 floats
    finish(block_sum(s), partials, counter, total);
}
// --8<-- [end:kernel]
