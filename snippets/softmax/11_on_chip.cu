// Rung 11, for the longest rows: a block per row again, as in rung 7, but the row is held in
// the storage of a whole SM. Its first 57344 floats come into shared memory through the TMA
// (rung 10's bulk copies), the next 24576 into registers (six float4s a thread, rung 7's way),
// and only what is left of a longer row (49152 of 131072 floats) is read twice, the second
// time, with luck, out of the L2. No cluster, and no limit on the row's length.
// needs: sm_90a (the TMA's bulk copies)
#include "bulk_copy.cuh"
#include "reduce.cuh"

#define THREADS 1024
#define VEC 6                  // float4s a thread holds in registers: 24576 floats a block (eight spill)
#define SHARED_FLOATS 57344    // 224 KiB of the 227 a block may have
#define PIECES 4               // bulk copies into shared memory, each on its own mbarrier

// Fold 4 more values into a thread's running (max, sum); the exps are taken once, against the
// new max.
__device__ __forceinline__ MaxSum push4(MaxSum s, float4 q)
{
    float m = fmaxf(s.m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
    if (m == -INFINITY) return s;  // nothing but -inf so far
    return {m, s.d * __expf(s.m - m) + __expf(q.x - m) + __expf(q.y - m) + __expf(q.z - m) + __expf(q.w - m)};
}

// exp(x - m) for each of q's 4 values, or 0 where the max is -inf (never -inf - -inf = NaN).
__device__ __forceinline__ float4 exp4(float4 q, float m)
{
    if (m == -INFINITY) return make_float4(0, 0, 0, 0);
    return make_float4(__expf(q.x - m), __expf(q.y - m), __expf(q.z - m), __expf(q.w - m));
}

__device__ __forceinline__ float4 scale4(float4 q, float s) { return make_float4(q.x * s, q.y * s, q.z * s, q.w * s); }

__device__ __forceinline__ float max4(float4 q) { return fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)); }

__device__ __forceinline__ float sum4(float4 q) { return q.x + q.y + q.z + q.w; }

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS, 1)
softmax_on_chip(const float* x, float* y, int rows, int cols)
{
    extern __shared__ float4 held[];  // the row's first n_shared float4s
    __shared__ uint64_t landed[PIECES];
    // The host sees to it that cols % 4 == 0, so the row is a whole number of aligned float4s.
    const float4* in = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    float4* out = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * cols);
    int n4 = cols / 4;
    int n_shared = min(n4, SHARED_FLOATS / 4), n_regs = min(n4 - n_shared, THREADS * VEC);
    int piece = (n_shared + PIECES - 1) / PIECES;  // float4s a piece; the last may be short or empty

    if (threadIdx.x == 0) bulk_load_pieces(held, in, n_shared, PIECES, piece, landed);
    // Float4 k of the registers' part is n_shared + threadIdx.x + k * THREADS.
    float4 v[VEC];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int i = threadIdx.x + k * THREADS;
        v[k] = i < n_regs ? in[n_shared + i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
    __syncthreads();  // the mbarriers are initialised before anyone waits on them

    // This thread's (max, sum): its registers, then its float4s of each piece as it lands, then
    // the rest of the row, streamed last so that the L2 still has it when it is read again.
    // Each exp is kept where its value was, against the max it was taken with (reg_max,
    // piece_max[p]), to be rescaled once the row's is known.
    float reg_max = -INFINITY;
#pragma unroll
    for (int k = 0; k < VEC; k++) reg_max = fmaxf(reg_max, max4(v[k]));
    MaxSum mine = {reg_max, 0.0f};
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        v[k] = exp4(v[k], reg_max);
        mine.d += sum4(v[k]);
    }
    float piece_max[PIECES];
#pragma unroll
    for (int p = 0; p < PIECES; p++) {
        int lo = min(n_shared, p * piece), hi = min(n_shared, lo + piece);
        mbar_wait(&landed[p], 0);
        float m = -INFINITY, d = 0.0f;
        for (int i = lo + threadIdx.x; i < hi; i += THREADS) m = fmaxf(m, max4(held[i]));
        for (int i = lo + threadIdx.x; i < hi; i += THREADS) {
            float4 e = exp4(held[i], m);
            d += sum4(e);
            held[i] = e;
        }
        piece_max[p] = m;
        mine = merge(mine, {m, d});
    }
    int rest = n_shared + n_regs;
#pragma unroll 2
    for (int i = rest + threadIdx.x; i < n4; i += THREADS) mine = push4(mine, in[i]);

    MaxSum row = block_reduce(mine);
    float inv = 1.0f / row.d;
    // The rest first, while the L2 still has it; then the registers, then shared memory.
#pragma unroll 2
    for (int i = rest + threadIdx.x; i < n4; i += THREADS) out[i] = scale4(exp4(in[i], row.m), inv);
    float s = __expf(reg_max - row.m) * inv;
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        int i = threadIdx.x + k * THREADS;
        if (i < n_regs) out[n_shared + i] = scale4(v[k], s);
    }
#pragma unroll
    for (int p = 0; p < PIECES; p++) {
        int lo = min(n_shared, p * piece), hi = min(n_shared, lo + piece);
        s = __expf(piece_max[p] - row.m) * inv;
        for (int i = lo + threadIdx.x; i < hi; i += THREADS) out[i] = scale4(held[i], s);
    }
}
// --8<-- [end:kernel]
