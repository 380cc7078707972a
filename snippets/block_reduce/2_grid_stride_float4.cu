// Rung 2: a grid sized to the GPU, not to the data. Each thread strides over the whole array
// with 16-byte loads, four of them in flight per iteration, and keeps a running sum in a
// register; the block and grid reductions then run once per block instead of once per 256
// floats.
#include "reduce.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void sum_grid_stride(const float* x, float* partials, unsigned int* counter,
                                           float* total, long long n)
{
    const float4* x4 = reinterpret_cast<const float4*>(x);
    long long n4 = n / 4, stride = (long long)gridDim.x * blockDim.x;
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = x4[i], b = x4[i + stride], c = x4[i + 2 * stride], d = x4[i + 3 * stride];
        s += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w))
           + ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
    }
    for (; i < n4; i += stride) {
        float4 a = x4[i];
        s += (a.x + a.y) + (a.z + a.w);
    }
    long long tail = 4 * n4 + blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (tail < n) s += x[tail];  // the last n % 4 floats
    finish(block_sum(s), partials, counter, total);
}
// --8<-- [end:kernel]
