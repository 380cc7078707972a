// Rung 8, for short rows (up to 256 floats): a whole block per row of 32 floats leaves most
// threads idle and pays for __syncthreads. Here a group of lanes within one warp owns the rows —
// as few lanes as a row needs (1 to 32), so a warp may hold several short rows — keeps them in
// registers, and reduces with shuffles inside the group alone: no shared memory, no block
// barrier. Each lane has two float4 slots; when a row needs one, the group takes two rows, so
// every lane keeps two loads in flight whatever the row length. The slots a row needs are a
// template parameter, picked by a branch once per thread: with it known to the compiler, which
// slot belongs to which row is settled at compile time, and no instruction is spent on slots of
// other rows. Why not four slots, for rows of 512: a kernel's register count is that of its
// hungriest branch, and a four-slot branch took every row length from 32 registers to 46, from
// 2048 threads an SM to 1280; on the H200 that cost the short rows 5 to 10% (dev runs,
// 2026-11-23). Each exp is computed once and kept. Indices are ints, as fast as they can be
// (64-bit ones cost 3 to 8%): rows * cols is widened to size_t, and the launch keeps the thread
// count and rows + 2 below 2^31 (about 32 threads per float32 row or fewer: 2^36 elements).
#include "reduce.cuh"

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
#define SLOTS 2  // float4 slots a lane: rows of up to 32 lanes x 8 floats = 256 columns

// PER_ROW float4 slots a row, SLOTS / PER_ROW rows a group of lanes.
template <int PER_ROW>
__device__ __forceinline__ void softmax_rows(const float* x, float* y, int rows, int cols, int lanes)
{
    constexpr int BATCH = SLOTS / PER_ROW;
    int group = (blockIdx.x * blockDim.x + threadIdx.x) / lanes;
    int lane = threadIdx.x % lanes;
    int first = group * BATCH;
    bool vector = cols % 4 == 0;

    // Slot k holds float4 number lane + lanes * (k % PER_ROW) of row first + k / PER_ROW.
    float v[BATCH * PER_ROW][4];
#pragma unroll
    for (int k = 0; k < BATCH * PER_ROW; k++) {
        int row = first + k / PER_ROW, base = 4 * (lane + lanes * (k % PER_ROW));
        const float* in = x + (size_t)row * cols;
        if (row < rows && vector && base < cols) {
            float4 q = *reinterpret_cast<const float4*>(in + base);
            v[k][0] = q.x, v[k][1] = q.y, v[k][2] = q.z, v[k][3] = q.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++) v[k][e] = row < rows && base + e < cols ? in[base + e] : -INFINITY;
        }
    }
    // Row r of the batch: its maximum, then v = exp(v - max) in place and the sum of those.
    // Every lane runs every shuffle, so all 32 take part.
    float inv[BATCH];
#pragma unroll
    for (int r = 0; r < BATCH; r++) {
        float m = -INFINITY, d = 0.0f;
#pragma unroll
        for (int k = r * PER_ROW; k < (r + 1) * PER_ROW; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) m = fmaxf(m, v[k][e]);
        m = group_max(m, lanes);
#pragma unroll
        for (int k = r * PER_ROW; k < (r + 1) * PER_ROW; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                v[k][e] = m == -INFINITY ? 0.0f : expf(v[k][e] - m);  // a row of only -inf: 0 / 0 = NaN below
                d += v[k][e];
            }
        inv[r] = 1.0f / group_sum(d, lanes);
    }
#pragma unroll
    for (int k = 0; k < BATCH * PER_ROW; k++) {
        int row = first + k / PER_ROW, base = 4 * (lane + lanes * (k % PER_ROW));
        if (row >= rows) continue;
        float* out = y + (size_t)row * cols;
        float s = inv[k / PER_ROW];
        if (vector && base < cols) {
            *reinterpret_cast<float4*>(out + base) = make_float4(v[k][0] * s, v[k][1] * s, v[k][2] * s, v[k][3] * s);
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (base + e < cols) out[base + e] = v[k][e] * s;
        }
    }
}

extern "C" __global__ void softmax_warp_per_row(const float* x, float* y, int rows, int cols, int lanes)
{
    if (cols > 4 * lanes) return softmax_rows<2>(x, y, rows, cols, lanes);  // one row a group
    return softmax_rows<1>(x, y, rows, cols, lanes);                         // two rows a group
}
// --8<-- [end:kernel]
