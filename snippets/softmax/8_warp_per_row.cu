// Rung 8, for short rows: a whole block per row of 32 floats leaves most threads idle and pays
// for __syncthreads. Here a group of lanes within one warp owns the rows — as few lanes as a row
// needs (1 to 32), so a warp may hold several short rows — keeps them in registers, and reduces
// with shuffles inside the group alone: no shared memory, no block barrier. Each lane has VEC
// float4 slots; when a row needs fewer, the group takes several rows at once, so every lane
// keeps VEC loads in flight whatever the row length. Indices are ints, as fast as they can be
// (64-bit ones cost 3 to 8%): rows * cols is widened to size_t, and the launch keeps the thread
// count and rows + VEC below 2^31 (about 32 threads per float32 row or fewer: 2^36 elements).
#include "reduce.cuh"

#define VEC 8  // float4 slots per lane: rows of up to 32 lanes x 32 floats = 1024 columns

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
                                                int lanes)
{
    int per_row = (cols + 4 * lanes - 1) / (4 * lanes);  // slots one row needs, 1 to VEC
    int batch = VEC / per_row;                            // rows per group
    int group = (blockIdx.x * blockDim.x + threadIdx.x) / lanes;
    int lane = threadIdx.x % lanes;
    int first = group * batch;
    bool vector = cols % 4 == 0;

    // Slot k holds float4 number lane + lanes * (k % per_row) of row first + k / per_row.
    float v[VEC][4];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int row = first + k / per_row, base = 4 * (lane + lanes * (k % per_row));
        bool live = k < batch * per_row && row < rows;
        const float* in = x + (size_t)row * cols;
        if (live && vector && base < cols) {
            float4 q = *reinterpret_cast<const float4*>(in + base);
            v[k][0] = q.x, v[k][1] = q.y, v[k][2] = q.z, v[k][3] = q.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++) v[k][e] = live && base + e < cols ? in[base + e] : -INFINITY;
        }
    }
    // One (max, sum) per row of the batch; every lane runs every shuffle, so all 32 take part.
    float m[VEC], inv[VEC];
#pragma unroll
    for (int r = 0; r < VEC; r++) {
        float mr = -INFINITY, dr = 0.0f;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            if (k / per_row == r)
#pragma unroll
                for (int e = 0; e < 4; e++) mr = fmaxf(mr, v[k][e]);
        mr = group_max(mr, lanes);
#pragma unroll
        for (int k = 0; k < VEC; k++)
            if (k / per_row == r && mr != -INFINITY)
#pragma unroll
                for (int e = 0; e < 4; e++) dr += expf(v[k][e] - mr);
        m[r] = mr;
        inv[r] = 1.0f / group_sum(dr, lanes);
    }
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int r = k / per_row, row = first + r, base = 4 * (lane + lanes * (k % per_row));
        if (k >= batch * per_row || row >= rows) continue;
        float* out = y + (size_t)row * cols;
        float mr = m[0], ir = inv[0];
#pragma unroll
        for (int j = 1; j < VEC; j++)
            if (j == r) mr = m[j], ir = inv[j];  // pick row r's statistics without indexing
        if (vector && base < cols) {
            *reinterpret_cast<float4*>(out + base) =
                make_float4(expf(v[k][0] - mr) * ir, expf(v[k][1] - mr) * ir,
                            expf(v[k][2] - mr) * ir, expf(v[k][3] - mr) * ir);
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (base + e < cols) out[base + e] = expf(v[k][e] - mr) * ir;
        }
    }
}
// --8<-- [end:kernel]
