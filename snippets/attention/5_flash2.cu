// Rung 5: rung 4 at FlashAttention-2's proportions. The same mma.sync products and online
// softmax in registers; what changes is who does what, and how often O is rescaled:
// - A warp owns 32 query rows, not 16: two m16 tiles. Every fragment of K or V it reads from
//   shared memory (ldmatrix) now feeds two mma instead of one, which halves the shared-memory
//   reads of K and V per flop; rung 4 read as many bytes of them as its tensor cores could use.
// - A block of 4 warps takes BM = 128 queries, FlashAttention-2's tile: at 255 registers a
//   thread, two such blocks fill an SM (8 warps), and they wait at their barriers independently.
// - Tile t+1's keys are copied right after the barrier, its values only after Q K^T: the copies
//   go out in two smaller bursts, not one, beside the shared-memory reads of the products.
// - One barrier per tile: it says both that tile t has landed and that every warp is done with
//   tile t-1, whose stage tile t+1's copies then refill.
// - A lazy maximum: the maximum that the weights are taken against moves, and O and l are
//   rescaled, only when some row of the warp has grown by more than 2^8 in weight. Weights may
//   then reach 256, which fp16 and bf16 hold to the same relative precision as 1, and the
//   quotient O / l is the same. With this notebook's random inputs only a row's first tile
//   moves it, and the 128 multiplies of O a tile are skipped; inputs whose maxima climb
//   steeply rescale more often. (FlashAttention-4 is reported to rescale on such a test.)
// - The scale and the maximum meet in one fused multiply-add inside exp2 (scores stay raw until
//   then), an exp2 of one instruction (exp2_ftz: weights below 2^-126 become 0), and the row
//   sums l add the fp32 weights before they are rounded for P V.
// - At D = 128 a thread holds 128 floats of O and 64 of S: with Q's and K's fragments that is
//   more than its 255 registers, and ptxas spills a few bytes to local memory. Tiles of 32
//   keys fit without spilling, but an earlier version ran slower with them in trials on the
//   H100 (twice the barriers per key), so the tile stays at 64.
// - Causal: the blocks with the most tiles to walk are launched first (reversed along x), so
//   that the short ones fill the last wave; a warp masks only the tiles that cross its rows'
//   diagonal.
// - Any N: rows past the end are zeros in shared memory (load_rows), keys past it are masked,
//   and output rows past it are not written.
// Shared memory: 128 queries and two stages of 64 keys and 64 values, 102 KiB at D = 128.
// D must be 64 or 128.
// needs: sm_80 (cp.async copies and bf16 mma.sync)
#include "flash.cuh"  // load_rows, cp.async (groups too) and pack, shared with rung 4

#define BM 128     // queries per block: 4 warps x 32 rows
#define BN 64      // keys per tile
#define THREADS 128
#define MT 2       // m16 tiles per warp
#define GROWTH 8.0f  // log2 of how far a row's weights may grow before O is rescaled

// --8<-- [start:kernel]
// f(mt, nt, e) for each element e of each m16n8 tile of a warp's scores, the walk that the masks
// and the weights both make; unrolled, so that mt, nt and e are constants and s stays in registers.
template <int NTILES, typename F>
__device__ __forceinline__ void for_each_score(F&& f)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NTILES; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) f(mt, nt, e);
}

template <typename T, int D>
__device__ __forceinline__ void flash2(const T* Q, const T* K, const T* V, float* O, int n, float scale, int causal)
{
    constexpr int STRIDE = D + 8;  // a row in shared memory, in elements
    constexpr int KSTEPS = D / 16, DTILES = D / 8, NTILES = BN / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    T* qs = reinterpret_cast<T*>(smem);  // the block's BM queries
    T* ks = qs + BM * STRIDE;             // two stages of BN keys
    T* vs = ks + 2 * BN * STRIDE;         // two stages of BN values
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int i0 = (causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM;
    const long long head = head_index() * n * D;
    const T* k = K + head;
    const T* v = V + head;
    const int keys = causal ? min(n, i0 + BM) : n;  // the keys any of the block's queries sees
    const int tiles = (keys + BN - 1) / BN;

    load_rows<D, BM, THREADS>(qs, Q + head, i0, n);  // Q, and tile 0 into stage 0: one group
    load_rows<D, BN, THREADS>(ks, k, 0, n);
    load_rows<D, BN, THREADS>(vs, v, 0, n);
    cp_async_commit();

    float acc[MT][DTILES][4] = {};  // the warp's 32 x D outputs: two m16 tiles of m16n8 accumulators
    // This thread's four rows: row0 + 16 * mt + 8 * h. Their maxima (raw scores, the same in the
    // 4 threads of a quad; the lazy one the weights are taken against), that maximum times
    // scale * log2(e) (`shift`: a weight is exp2(s * scale_log2 - shift)), and their sums (of
    // this thread's columns only).
    const int row0 = i0 + warp * 32 + lane / 4;
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) m[mt][h] = -INFINITY, l[mt][h] = 0.0f;
    float shift[MT][2] = {};  // 0 while m is -inf: -inf - -inf would be NaN
    const float scale_log2 = scale * LOG2E;

    for (int t = 0; t < tiles; ++t) {
        // Tile t has landed, for this thread's copies; past the barrier, for every thread's. Past
        // it too, every warp is done with tile t-1: tile t+1 goes into that stage, keys now and
        // values after Q K^T, and has the rest of this iteration to land.
        cp_async_wait<0>();
        __syncthreads();
        if (t + 1 < tiles) load_rows<D, BN, THREADS>(ks + (t + 1) % 2 * BN * STRIDE, k, (t + 1) * BN, n);
        cp_async_commit();
        const T* kt = ks + t % 2 * BN * STRIDE;
        const T* vt = vs + t % 2 * BN * STRIDE;

        // S = Q K^T, 32 x 64 per warp. Each K fragment (16 keys x 16 of D) serves both m-tiles.
        float s[MT][NTILES][4] = {};
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            unsigned a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
                ldmatrix_x4(a[mt], qs + (warp * 32 + 16 * mt + lane % 16) * STRIDE + 16 * kk + 8 * (lane / 16));
#pragma unroll
            for (int np = 0; np < NTILES / 2; ++np) {
                unsigned b[4];
                ldmatrix_x4(b, kt + (16 * np + lane % 8 + 8 * (lane / 16)) * STRIDE + 16 * kk + 8 * (lane / 8 % 2));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma_16816(s[mt][2 * np], a[mt], b[0], b[1], T());
                    mma_16816(s[mt][2 * np + 1], a[mt], b[2], b[3], T());
                }
            }
        }

        if (t + 1 < tiles) load_rows<D, BN, THREADS>(vs + (t + 1) % 2 * BN * STRIDE, v, (t + 1) * BN, n);
        cp_async_commit();
        // Masks, only on the tiles that need one (a warp-uniform test): keys past the end, and
        // causal keys after the query. Element e of n-tile nt of m-tile mt is row
        // row0 + 16 mt + 8 (e / 2), key t BN + 8 nt + 2 (lane % 4) + e % 2.
        const int key0 = t * BN;
        if (key0 + BN > n || (causal && key0 + BN - 1 > i0 + warp * 32)) {
            // The scalars by value: by reference, nvcc compiles these tests otherwise (same results).
            for_each_score<NTILES>([=, &s](int mt, int nt, int e) {
                const int key = key0 + 8 * nt + 2 * (lane % 4) + e % 2;
                if (key >= n || (causal && key > row0 + 16 * mt + 8 * (e / 2))) s[mt][nt][e] = -INFINITY;
            });
        }

        // Online softmax: each row's maximum over the tile and the quad. The warp moves its
        // maxima, and rescales O and l, only if some row grew by more than 2^GROWTH in weight
        // (a first finite score always does: from -inf the growth is infinite).
        float cand[MT][2];
        bool grow = false;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = m[mt][h];
#pragma unroll
                for (int nt = 0; nt < NTILES; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                cand[mt][h] = mx;
                grow |= (mx - m[mt][h]) * scale_log2 > GROWTH;
            }
        if (__any_sync(0xffffffffu, grow)) {
            float alpha[MT][2];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float sh = cand[mt][h] == -INFINITY ? 0.0f : cand[mt][h] * scale_log2;
                    alpha[mt][h] = exp2_ftz(m[mt][h] * scale_log2 - sh);  // what the old terms are multiplied by
                    m[mt][h] = cand[mt][h];
                    shift[mt][h] = sh;
                    l[mt][h] *= alpha[mt][h];
                }
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int dt = 0; dt < DTILES; ++dt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[mt][dt][e] *= alpha[mt][e / 2];
        }
        for_each_score<NTILES>([&](int mt, int nt, int e) {
            const float p = exp2_ftz(fmaf(s[mt][nt][e], scale_log2, -shift[mt][e / 2]));
            s[mt][nt][e] = p;
            l[mt][e / 2] += p;
        });

        // O += P V, 16 keys at a time; each V fragment (16 keys x 16 of D) serves both m-tiles.
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            unsigned a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                a[mt][0] = pack(s[mt][2 * kk][0], s[mt][2 * kk][1], T());
                a[mt][1] = pack(s[mt][2 * kk][2], s[mt][2 * kk][3], T());
                a[mt][2] = pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1], T());
                a[mt][3] = pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3], T());
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; ++dp) {
                unsigned b[4];
                ldmatrix_x4_trans(b, vt + (16 * kk + lane % 16) * STRIDE + 16 * dp + 8 * (lane / 16));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma_16816(acc[mt][2 * dp], a[mt], b[0], b[1], T());
                    mma_16816(acc[mt][2 * dp + 1], a[mt], b[2], b[3], T());
                }
            }
        }
    }

    // The quad's partial sums make each row's l; O = acc / l, two floats per store, rows < n.
    float* o = O + head;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l[mt][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const int row = row0 + 16 * mt + 8 * h;
            if (row >= n) continue;
#pragma unroll
            for (int dt = 0; dt < DTILES; ++dt)
                *reinterpret_cast<float2*>(o + (long long)row * D + 8 * dt + 2 * (lane % 4)) =
                    make_float2(acc[mt][dt][2 * h] / sum, acc[mt][dt][2 * h + 1] / sum);
        }
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_flash2(const void* q, const void* k, const void* v, float* o, int n, int d, float scale, int causal, int bf16)
{
    ATTENTION_DISPATCH(flash2, q, k, v, d, bf16, o, n, scale, causal);
}
// --8<-- [end:kernel]
