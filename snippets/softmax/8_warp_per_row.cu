// Rung 8, for short rows: a whole block per row of 32 floats leaves most threads idle and pays
// for __syncthreads. Here one warp owns one row (up to 32 lanes x 32 floats = 1024), keeps it in
// registers, and reduces with shuffles alone: no shared memory, no block barrier.
#include "reduce.cuh"

#define VEC 8  // float4 loads per lane

// --8<-- [start:kernel]
extern "C" __global__ void softmax_warp_per_row(const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) {
        return;  // the whole warp leaves together, so the shuffles below stay full-warp
    }
    const float* in = x + (size_t)row * cols;
    float* out = y + (size_t)row * cols;
    bool vector = cols % 4 == 0;
    float v[VEC][4];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int base = 4 * (lane + 32 * k);
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
    m = warp_max(m);
    if (m != -INFINITY) {
#pragma unroll
        for (int k = 0; k < VEC; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) d += expf(v[k][e] - m);
    }
    float inv = 1.0f / warp_sum(d);
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int base = 4 * (lane + 32 * k);
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
