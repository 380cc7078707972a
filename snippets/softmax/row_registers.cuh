// Rungs 7 and 9: a row, or a cluster block's chunk of one, read once into registers, reduced
// from them and written from them. Thread i holds floats begin + 4 * (i + k * blockDim.x) .. +3
// for k < Vec.
#pragma once
#include "reduce.cuh"

// --8<-- [start:registers]
// The exponential: expf, or __expf (an exp2 in hardware, well inside the tolerance).
struct Exp {
    __device__ float operator()(float x) const { return expf(x); }
};
struct FastExp {
    __device__ float operator()(float x) const { return __expf(x); }
};

// float4 loads where the row starts 16-byte aligned (vector: cols a multiple of 4), one float at
// a time otherwise; -inf past end, which neither the maximum nor the sum counts.
template <int Vec>
__device__ __forceinline__ void load_chunk(float (&v)[Vec][4], const float* in, int begin, int end, bool vector)
{
#pragma unroll
    for (int k = 0; k < Vec; k++) {
        int base = begin + 4 * (threadIdx.x + k * blockDim.x);
        if (vector && base < end) {
            float4 q = *reinterpret_cast<const float4*>(in + base);
            v[k][0] = q.x, v[k][1] = q.y, v[k][2] = q.z, v[k][3] = q.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++) v[k][e] = base + e < end ? in[base + e] : -INFINITY;
        }
    }
}

// This thread's (max, sum) pair: the maximum first, then one exp per value.
template <int Vec, typename ExpFn>
__device__ __forceinline__ MaxSum chunk_stats(const float (&v)[Vec][4], ExpFn exp)
{
    float m = -INFINITY, d = 0.0f;
#pragma unroll
    for (int k = 0; k < Vec; k++)
#pragma unroll
        for (int e = 0; e < 4; e++) m = fmaxf(m, v[k][e]);
    if (m != -INFINITY) {
#pragma unroll
        for (int k = 0; k < Vec; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) d += exp(v[k][e] - m);
    }
    return {m, d};
}

// exp(v - s.m) / s.d, written where v was read from.
template <int Vec, typename ExpFn>
__device__ __forceinline__ void store_chunk(float* out, const float (&v)[Vec][4], MaxSum s, int begin, int end,
                                            bool vector, ExpFn exp)
{
    float inv = 1.0f / s.d;
#pragma unroll
    for (int k = 0; k < Vec; k++) {
        int base = begin + 4 * (threadIdx.x + k * blockDim.x);
        if (vector && base < end) {
            *reinterpret_cast<float4*>(out + base) =
                make_float4(exp(v[k][0] - s.m) * inv, exp(v[k][1] - s.m) * inv,
                            exp(v[k][2] - s.m) * inv, exp(v[k][3] - s.m) * inv);
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (base + e < end) out[base + e] = exp(v[k][e] - s.m) * inv;
        }
    }
}
// --8<-- [end:registers]
