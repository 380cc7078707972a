// Rung 8, for short rows: a whole block per row of 32 floats leaves most threads idle and pays
// for __syncthreads. Here a group of lanes within one warp owns one row — as few lanes as the
// row needs, 1 to 32, so a warp may hold several short rows — keeps it in registers, and
// reduces with shuffles inside the group alone: no shared memory, no block barrier.
#include "reduce.cuh"

#define VEC 8  // float4 loads per lane: rows of up to 32 lanes x 32 floats = 1024 columns

// Shuffle reductions over aligned groups of `lanes` lanes (a power of two).
__device__ __forceinline__ float group_max(float v, int lanes)
{
    for (int o = lanes / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float group_sum(float v, int lanes)
{
    for (int o = lanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// --8<-- [start:kernel]
extern "C" __global__ void softmax_warp_per_row(const float* x, float* y, int rows, int cols,
                                                int lanes_per_row)
{
    int group = (blockIdx.x * blockDim.x + threadIdx.x) / lanes_per_row;
    int lane = threadIdx.x % lanes_per_row;
    // Lanes past the last row still run (clamped to it) so every shuffle has all 32 lanes;
    // they just do not store.
    int row = min(group, rows - 1);
    const float* in = x + (size_t)row * cols;
    float* out = y + (size_t)row * cols;
    bool vector = cols % 4 == 0;
    float v[VEC][4];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int base = 4 * (lane + lanes_per_row * k);
        if (vector && base < cols) {
            float4 q = *reinterpret_cast<const float4*>(in + base);
            v[k][0] = q.x, v[k][1] = q.y, v[k][2] = q.z, v[k][3] = q.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++) v[k][e] = base + e < cols ? in[base + e] : -INFINITY;
        }
    }
    float m = -INFINITY, d = 0.0f;
#pragma unroll
    for (int k = 0; k < VEC; k++)
#pragma unroll
        for (int e = 0; e < 4; e++) m = fmaxf(m, v[k][e]);
    m = group_max(m, lanes_per_row);
    if (m != -INFINITY) {
#pragma unroll
        for (int k = 0; k < VEC; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) d += expf(v[k][e] - m);
    }
    float inv = 1.0f / group_sum(d, lanes_per_row);
    if (group >= rows) {
        return;
    }
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int base = 4 * (lane + lanes_per_row * k);
        if (vector && base < cols) {
            *reinterpret_cast<float4*>(out + base) =
                make_float4(expf(v[k][0] - m) * inv, expf(v[k][1] - m) * inv,
                            expf(v[k][2] - m) * inv, expf(v[k][3] - m) * inv);
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (base + e < cols) out[base + e] = expf(v[k][e] - m) * inv;
        }
    }
}
// --8<-- [end:kernel]
