// Rung 4: tensor cores. Rung 3's tiling, with both products on mma.sync.m16n8k16 (fp16 or bf16
// in, fp32 accumulate), the instruction of the fp16 matmul entry's rungs 2 and 3:
// - A block of 4 warps takes BM = 64 queries, 16 rows per warp, against tiles of BN = 64 keys.
// - The block's Q tile is copied to shared memory once; each tile's Q K^T reads its fragments
//   from there (ldmatrix). Kept in registers instead they would cost 32 more per thread at
//   D = 128, beside the 64 of O and the 32 of S.
// - S = Q K^T leaves each thread two rows' worth of a warp's 16 x 64 scores, in the m16n8
//   accumulator layout. The online softmax works on them in registers: a row's scores are
//   spread over the 4 threads of a quad, so its maximum is 2 shuffles.
// - P is rounded to the input type and goes straight back into the tensor cores as the A operand
//   of P V, without shared memory: two m16n8 accumulators side by side have the layout of one
//   m16k16 A fragment. The row sums l are taken from the rounded values, the weights P V uses.
// - K and V tiles are double-buffered: cp.async copies tile t+1 into one stage while the
//   tensor cores read tile t from the other.
// D must be 64 or 128, and N a multiple of 64 (whole tiles; no masking of a ragged end).
// needs: sm_80 (cp.async copies and bf16 mma.sync)
#include "flash.cuh"  // load_rows, cp.async (groups too) and pack, shared with rung 5

#define BM 64  // queries per block: 4 warps x 16 rows
#define BN 64  // keys per tile
#define THREADS 128

// The sum of a packed pair, as the tensor cores will see it.
__device__ __forceinline__ float pair_sum(unsigned u, __half)
{
    const float2 f = __half22float2(*reinterpret_cast<__half2*>(&u));
    return f.x + f.y;
}

__device__ __forceinline__ float pair_sum(unsigned u, __nv_bfloat16)
{
    const float2 f = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&u));
    return f.x + f.y;
}

// --8<-- [start:kernel]
template <typename T, int D>
__device__ __forceinline__ void flash(const T* Q, const T* K, const T* V, float* O, int n, float scale, int causal)
{
    constexpr int STRIDE = D + 8, TILE = 64 * STRIDE;  // a 64-row tile in shared memory, in elements
    constexpr int KSTEPS = D / 16, DTILES = D / 8, NTILES = BN / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    T* qs = reinterpret_cast<T*>(smem);  // the block's queries
    T* ks = qs + TILE;                    // two stages of keys
    T* vs = ks + 2 * TILE;                // two stages of values
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int i0 = blockIdx.x * BM;
    const long long head = head_index() * n * D;
    const T* k = K + head;
    const T* v = V + head;
    // Causal: key tiles up to the diagonal one, which holds the block's own queries (BM == BN).
    const int tiles = causal ? blockIdx.x + 1 : n / BN;

    load_rows<D, BM, THREADS>(qs, Q + head, i0, n);  // Q, and tile 0 into stage 0: one group
    load_rows<D, BN, THREADS>(ks, k, 0, n);
    load_rows<D, BN, THREADS>(vs, v, 0, n);
    cp_async_commit();

    const float scale_log2 = scale * LOG2E;
    float acc[DTILES][4] = {};  // the warp's 16 x D outputs, as m16n8 accumulators
    // This thread's two rows of the warp's 16 (lane/4 and lane/4 + 8): their running maxima
    // (the same in the 4 threads of the quad) and sums (of this thread's columns only, rescaled
    // alike: the quad adds them up at the end).
    const int row = i0 + warp * 16 + lane / 4;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    for (int t = 0; t < tiles; ++t) {
        // Tile t+1 into the other stage, whose last readers passed the barrier that ended
        // iteration t-1. The group is committed even when empty, so the wait below is always "all
        // but the newest group": tile t (and, the first time, Q) has landed.
        if (t + 1 < tiles) {
            load_rows<D, BN, THREADS>(ks + (t + 1) % 2 * TILE, k, (t + 1) * BN, n);
            load_rows<D, BN, THREADS>(vs + (t + 1) % 2 * TILE, v, (t + 1) * BN, n);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();  // every thread's copies, visible to every warp
        const T* kt = ks + t % 2 * TILE;
        const T* vt = vs + t % 2 * TILE;

        // S = Q K^T, 16 x 64 per warp: 8 n-tiles of 8 keys. Q's A fragment per 16 columns of D:
        // rows +0..7 and +8..15, each at d +0..7 and +8..15. K's rows are keys with D contiguous,
        // which is already the "col" layout mma wants for B: ldmatrix without .trans. Its four
        // 8x8 matrices: keys +0..7 and +8..15 (two n-tiles), each at d +0..7 and +8..15.
        float s[NTILES][4] = {};
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            unsigned a[4];
            ldmatrix_x4(a, qs + (warp * 16 + lane % 16) * STRIDE + 16 * kk + 8 * (lane / 16));
#pragma unroll
            for (int np = 0; np < NTILES / 2; ++np) {
                unsigned b[4];
                ldmatrix_x4(b, kt + (16 * np + lane % 8 + 8 * (lane / 16)) * STRIDE + 16 * kk + 8 * (lane / 8 % 2));
                mma_16816(s[2 * np], a, b[0], b[1], T());
                mma_16816(s[2 * np + 1], a, b[2], b[3], T());
            }
        }

        // Online softmax in registers. Element e of n-tile nt is row `row + 8 * (e / 2)`, key
        // t * BN + 8 * nt + 2 * (lane % 4) + e % 2. Causal: the diagonal tile masks the future.
        const bool diagonal = causal && t == tiles - 1;
        float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < NTILES; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x = s[nt][e] * scale_log2;
                if (diagonal && t * BN + 8 * nt + 2 * (lane % 4) + e % 2 > row + 8 * (e / 2)) x = -INFINITY;
                s[nt][e] = x;
                mt[e / 2] = fmaxf(mt[e / 2], x);
            }
        float shift[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 1));  // the quad's maximum
            mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 2));
            const float m_new = fmaxf(m[h], mt[h]);
            shift[h] = m_new == -INFINITY ? 0.0f : m_new;  // -inf - -inf would be NaN
            const float alpha = exp2f(m[h] - shift[h]);
            m[h] = m_new;
            l[h] *= alpha;
#pragma unroll
            for (int dt = 0; dt < DTILES; ++dt) {
                acc[dt][2 * h] *= alpha;
                acc[dt][2 * h + 1] *= alpha;
            }
        }

        // O += P V, 16 keys at a time: n-tiles 2kk and 2kk+1 of P are one A fragment (rows r and
        // r+8, keys +0..7 and +8..15). V's rows are keys with D contiguous: B in "row" layout,
        // so ldmatrix .trans, as for B in the matmul; each x4 covers 16 keys x 16 columns.
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            unsigned a[4];
            a[0] = pack(exp2f(s[2 * kk][0] - shift[0]), exp2f(s[2 * kk][1] - shift[0]), T());
            a[1] = pack(exp2f(s[2 * kk][2] - shift[1]), exp2f(s[2 * kk][3] - shift[1]), T());
            a[2] = pack(exp2f(s[2 * kk + 1][0] - shift[0]), exp2f(s[2 * kk + 1][1] - shift[0]), T());
            a[3] = pack(exp2f(s[2 * kk + 1][2] - shift[1]), exp2f(s[2 * kk + 1][3] - shift[1]), T());
            l[0] += pair_sum(a[0], T()) + pair_sum(a[2], T());
            l[1] += pair_sum(a[1], T()) + pair_sum(a[3], T());
#pragma unroll
            for (int dp = 0; dp < D / 16; ++dp) {
                unsigned b[4];
                ldmatrix_x4_trans(b, vt + (16 * kk + lane % 16) * STRIDE + 16 * dp + 8 * (lane / 16));
                mma_16816(acc[2 * dp], a, b[0], b[1], T());
                mma_16816(acc[2 * dp + 1], a, b[2], b[3], T());
            }
        }
        __syncthreads();  // every warp is done with stage t % 2 before iteration t+1 refills it
    }
    cp_async_wait<0>();

    // The quad's partial sums make each row's l; O = acc / l, two floats per store.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
    float* o = O + head;
#pragma unroll
    for (int dt = 0; dt < DTILES; ++dt) {
        const int col = 8 * dt + 2 * (lane % 4);
        *reinterpret_cast<float2*>(o + (long long)row * D + col) = make_float2(acc[dt][0] / l[0], acc[dt][1] / l[0]);
        *reinterpret_cast<float2*>(o + (long long)(row + 8) * D + col) =
            make_float2(acc[dt][2] / l[1], acc[dt][3] / l[1]);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_mma(const void* q, const void* k, const void* v, float* o, int n, int d, float scale, int causal, int bf16)
{
    // d is 64 or 128 (the launch checks): like the input type, the same for the whole grid.
    ATTENTION_DISPATCH(flash, q, k, v, d, bf16, o, n, scale, causal);
}
// --8<-- [end:kernel]
