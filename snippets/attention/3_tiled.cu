// Rung 3: tiled. A block takes BM = 64 queries and walks K and V in tiles of BN keys, staged in
// shared memory (converted to float once, on the way in), so each key and value read from global
// memory serves 64 queries instead of one. Per tile, on the CUDA cores in fp32: the 64 x BN
// scores, the online-softmax update of each query row, and O += P V.
// 256 threads as 16 row groups of 16: a thread owns 4 query rows and, of those rows, BN/16 of the
// tile's scores and D/16 of the output columns (its columns strided by 16, so a half-warp reads 16
// consecutive floats). The 16 threads of a row group are one half-warp: a row's maximum and sum
// take 4 shuffles. P goes through shared memory, because P V needs a whole row of it per thread.
// Causal: tiles wholly after the block's last query are skipped; the diagonal ones are masked.
// D must be 64 or 128 (the tile sizes are compiled for each); any N (tiles past the end are padded).
#include "attention.cuh"

#define BM 64        // queries per block
#define THREADS 256  // 16 row groups x 16 threads
#define ROWS 4       // query rows per thread: 16 x 4 = BM

// Keys per tile, and shared-memory strides in floats (odd, so the 16 different rows that a
// half-warp reads at one column fall in 16 different banks). About 65 KB (D = 64) or 73 KB
// (D = 128) of shared memory a block, past the 48 KB a launch gets without asking: the launch
// asks for it (Launch.shared_bytes).
template <int D>
struct Tiled {
    static constexpr int BN = D == 64 ? 64 : 32;
    static constexpr int QS = D + 1, KS = D + 1, PS = BN + 1;
};

// --8<-- [start:kernel]
template <typename T, int D>
__device__ __forceinline__ void tiled(const T* Q, const T* K, const T* V, float* O, int n, float scale, int causal)
{
    using C = Tiled<D>;
    constexpr int BN = C::BN, SC = BN / 16, OC = D / 16;  // scores and output columns per thread and row
    extern __shared__ float smem[];
    float* qs = smem;                // BM x D queries, times scale * log2(e)
    float* ks = qs + BM * C::QS;     // BN x D keys
    float* vs = ks + BN * C::KS;     // BN x D values
    float* ps = vs + BN * D;         // BM x BN probabilities
    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const int i0 = blockIdx.x * BM;
    const long long head = head_index() * n * D;
    const T* q = Q + head;
    const T* k = K + head;
    const T* v = V + head;

    // Queries past N (the last block's padding) are zeros: computed, never stored.
    for (int e = tid; e < BM * D; e += THREADS) {
        const int r = e / D, c = e % D;
        qs[r * C::QS + c] = i0 + r < n ? to_float(q[(long long)(i0 + r) * D + c]) * (scale * LOG2E) : 0.0f;
    }
    float m[ROWS], l[ROWS], acc[ROWS][OC];
#pragma unroll
    for (int a = 0; a < ROWS; ++a) {
        m[a] = -INFINITY;
        l[a] = 0.0f;
#pragma unroll
        for (int c = 0; c < OC; ++c) acc[a][c] = 0.0f;
    }

    // Causal: no query of this block sees a key past its last one, i0 + BM - 1.
    const int kv_end = causal ? min(n, i0 + BM) : n;
    for (int j0 = 0; j0 < kv_end; j0 += BN) {
        __syncthreads();  // the previous tile is no longer read (and, the first time, qs is written)
        for (int e = tid; e < BN * D; e += THREADS) {
            const int r = e / D, c = e % D;
            const bool inside = j0 + r < n;
            const long long at = (long long)(j0 + r) * D + c;
            ks[r * C::KS + c] = inside ? to_float(k[at]) : 0.0f;
            vs[r * D + c] = inside ? to_float(v[at]) : 0.0f;  // zeros, not garbage: 0 x NaN is NaN
        }
        __syncthreads();

        // S = Q K^T: this thread's scores are rows ty*ROWS + a, keys tx + 16*b.
        float s[ROWS][SC];
#pragma unroll
        for (int a = 0; a < ROWS; ++a)
#pragma unroll
            for (int b = 0; b < SC; ++b) s[a][b] = 0.0f;
#pragma unroll 8
        for (int c = 0; c < D; ++c) {
            float qa[ROWS], kb[SC];
#pragma unroll
            for (int a = 0; a < ROWS; ++a) qa[a] = qs[(ty * ROWS + a) * C::QS + c];
#pragma unroll
            for (int b = 0; b < SC; ++b) kb[b] = ks[(tx + 16 * b) * C::KS + c];
#pragma unroll
            for (int a = 0; a < ROWS; ++a)
#pragma unroll
                for (int b = 0; b < SC; ++b) s[a][b] = fmaf(qa[a], kb[b], s[a][b]);
        }

        // Online softmax, row by row: mask, the tile's row maximum, rescale, exponentiate.
#pragma unroll
        for (int a = 0; a < ROWS; ++a) {
            const int i = i0 + ty * ROWS + a;
            float mt = -INFINITY;
#pragma unroll
            for (int b = 0; b < SC; ++b) {
                const int j = j0 + tx + 16 * b;
                if (j >= n || (causal && j > i)) s[a][b] = -INFINITY;  // padding, and the future
                mt = fmaxf(mt, s[a][b]);
            }
            const float m_new = fmaxf(m[a], warp_reduce<16>(mt, Max()));
            const float shift = m_new == -INFINITY ? 0.0f : m_new;  // -inf - -inf would be NaN
            const float alpha = exp2f(m[a] - shift);
            float sum = 0.0f;
#pragma unroll
            for (int b = 0; b < SC; ++b) {
                const float p = exp2f(s[a][b] - shift);
                ps[(ty * ROWS + a) * C::PS + tx + 16 * b] = p;
                sum += p;
            }
            l[a] = l[a] * alpha + warp_reduce<16>(sum, Sum());
            m[a] = m_new;
#pragma unroll
            for (int c = 0; c < OC; ++c) acc[a][c] *= alpha;
        }
        __syncthreads();  // ps is complete (a row's half-warp writes it; the same half-warp reads it)

        // O += P V: this thread's outputs are rows ty*ROWS + a, columns tx + 16*c.
#pragma unroll 4
        for (int j = 0; j < BN; ++j) {
            float vj[OC];
#pragma unroll
            for (int c = 0; c < OC; ++c) vj[c] = vs[j * D + tx + 16 * c];
#pragma unroll
            for (int a = 0; a < ROWS; ++a) {
                const float p = ps[(ty * ROWS + a) * C::PS + j];
#pragma unroll
                for (int c = 0; c < OC; ++c) acc[a][c] = fmaf(p, vj[c], acc[a][c]);
            }
        }
    }
#pragma unroll
    for (int a = 0; a < ROWS; ++a) {
        const int i = i0 + ty * ROWS + a;
        if (i < n) {
#pragma unroll
            for (int c = 0; c < OC; ++c) O[head + (long long)i * D + tx + 16 * c] = acc[a][c] / l[a];
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_tiled(const void* q, const void* k, const void* v, float* o, int n, int d, float scale, int causal, int bf16)
{
    // d is 64 or 128 (the launch checks): like the input type, the same for the whole grid.
    ATTENTION_DISPATCH(tiled, q, k, v, d, bf16, o, n, scale, causal);
}
// --8<-- [end:kernel]
