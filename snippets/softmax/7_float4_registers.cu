// Rung 7: the row is read once, into registers, with 16-byte loads; the statistics come from the
// registers and the output is written from them. One read and one write of the data: the least
// traffic softmax can have. A block covers rows of up to 1024 threads x 32 floats = 32768.
#include "reduce.cuh"

#define VEC 8  // float4 loads per thread

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(1024)
softmax_float4_registers(const float* x, float* y, int rows, int cols)
{
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    // Rows start 16-byte aligned only when cols is a multiple of 4; otherwise load one by one.
    bool vector = cols % 4 == 0;
    float v[VEC][4];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int base = 4 * (threadIdx.x + k * blockDim.x);
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
    if (m != -INFINITY) {
#pragma unroll
        for (int k = 0; k < VEC; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) d += expf(v[k][e] - m);
    }
    MaxSum s = block_reduce({m, d});
    float inv = 1.0f / s.d;
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int base = 4 * (threadIdx.x + k * blockDim.x);
        if (vector && base < cols) {
            *reinterpret_cast<float4*>(out + base) =
                make_float4(expf(v[k][0] - s.m) * inv, expf(v[k][1] - s.m) * inv,
                            expf(v[k][2] - s.m) * inv, expf(v[k][3] - s.m) * inv);
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (base + e < cols) out[base + e] = expf(v[k][e] - s.m) * inv;
        }
    }
}
// --8<-- [end:kernel]
