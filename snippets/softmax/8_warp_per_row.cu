// Rung 8, for short rows: a whole block per row of 32 floats leaves most threads idle and pays
// for __syncthreads. Here a group of lanes within one warp owns the rows — as few lanes as a row
// needs (1 to 32), so a warp may hold several short rows — keeps them in registers, and reduces
// with shuffles inside the group alone: no shared memory, no block barrier. Each lane has SLOTS
// float4 slots: 2, or 4 for rows of 384 floats and more; when a row needs fewer, the group takes
// several rows at once, so every lane keeps SLOTS loads in flight whatever the row length. Two
// slots and blocks of 128 threads beat four and 256 by 1 to 2% at 32, 128 and 256 columns on
// the H100 (dev runs, 2026-11-23): more threads, each with less to wait for. The slots and the
// slots a row needs are template parameters, picked by a switch once per thread: with them
// known to the compiler, which slot belongs to which row is settled at compile time, and no
// instruction is spent on slots of other rows. Each exp is computed once and kept. Indices are
// ints, as fast as they can be (64-bit ones cost 3 to 8%): rows * cols is widened to size_t, and
// the launch keeps the thread count and rows + 4 below 2^31 (about 32 threads per float32 row or
// fewer: 2^36 elements).
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
// SLOTS float4 slots a lane, PER_ROW of them a row, SLOTS / PER_ROW rows a group of lanes.
template <int SLOTS, int PER_ROW>
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
    switch ((cols + 4 * lanes - 1) / (4 * lanes)) {  // the slots one row needs, 1 to 4
    case 1: return softmax_rows<2, 1>(x, y, rows, cols, lanes);
    case 2: return softmax_rows<2, 2>(x, y, rows, cols, lanes);
    case 3: return softmax_rows<4, 3>(x, y, rows, cols, lanes);
    default: return softmax_rows<4, 4>(x, y, rows, cols, lanes);
    }
}
// --8<-- [end:kernel]
