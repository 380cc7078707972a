// What rungs 6 and 7 share: FlashAttention-3's tile sizes and barriers, the producer's loads for
// a block of 128 queries, a consumer warpgroup's loop over its tiles of keys (Q K^T and P V
// issued as wgmmas, the online softmax, P packed as P V's A operand), and writing O. Rung 6
// runs them once a block; rung 7 (`Reload`) once per work item, its blocks taking several.
#pragma once
#include "wgmma_attention.cuh"

#define BM 128  // queries per block: two consumer warpgroups of 64
#define BN 128  // keys per tile
#define STAGES 2
#define CONSUMERS 2
#define THREADS (128 * (CONSUMERS + 1))  // and one producer warpgroup
#define TURN 1  // named barriers 1 and 2: each consumer's turn to issue
#define ZEROED 3  // named barrier 3: a ragged last tile's values are zeroed

// One mbarrier per event: Q landed, each stage of K and of V landed (full) or free again
// (empty), and Q free again (rung 7 reloads it once both consumers are done with it).
struct Barriers {
    uint64_t q, k_full[STAGES], k_empty[STAGES], v_full[STAGES], v_empty[STAGES], q_empty;
};

// The barriers, by the block's thread 0 (the others wait at the __syncthreads() that follows).
template <bool Reload>
__device__ __forceinline__ void init_barriers(Barriers& bar)
{
    mbar_init(&bar.q, 1);
    if (Reload) mbar_init(&bar.q_empty, CONSUMERS);
    for (int s = 0; s < STAGES; ++s) {
        mbar_init(&bar.k_full[s], 1), mbar_init(&bar.v_full[s], 1);
        mbar_init(&bar.k_empty[s], CONSUMERS), mbar_init(&bar.v_empty[s], CONSUMERS);
    }
    mbar_init_fence();
}

// The producer's loads for a block of queries from i0 (of the head whose first row is `head`):
// Q, then `tiles` tiles of K and V, each into the next stage once both consumers are done with
// what it held. The block has loaded `it` tiles before these (rung 6: none).
template <int D, typename T>
__device__ __forceinline__ void load_item(const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v,
                                          T* qs, T* ks, T* vs, Barriers& bar, int head, int i0, int tiles, int it)
{
    tma_load_tile<D>(qs, map_q, &bar.q, BM, 0, head + i0);
    for (int t = 0; t < tiles; ++t, ++it) {
        const int s = it % STAGES, round = it / STAGES;
        if (round > 0) mbar_wait(&bar.k_empty[s], (round - 1) % 2);  // both consumers are done with it
        tma_load_tile<D>(ks + s * BN * D, map_k, &bar.k_full[s], BN, 0, head + t * BN);
        if (round > 0) mbar_wait(&bar.v_empty[s], (round - 1) % 2);
        tma_load_tile<D>(vs + s * BN * D, map_v, &bar.v_full[s], BN, 0, head + t * BN);
    }
}

// S = Q K^T for the warpgroup's 64 queries (qs: its first row in slab 0 of the block's Q) and a
// tile's 128 keys: D / 16 wgmmas. Along D, the next 16 columns are 32 bytes further along the
// swizzled rows, and every 64 columns start a new slab.
template <typename T, int D>
__device__ __forceinline__ void issue_qk(float (&s)[BN / 2], const T* qs, const T* kt)
{
    fence_registers(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
        wgmma_qk(s, wgmma_desc(qs + kk / 4 * BM * 64 + kk % 4 * 16, 16, 1024),
                 wgmma_desc(kt + kk / 4 * BN * 64 + kk % 4 * 16, 16, 1024), kk > 0, T());
    wgmma_commit();
}

// O += P V for a tile: BN / 16 wgmmas, 16 keys each. The next 16 keys are 16 swizzled rows of
// 128 bytes further down each slab of V; the slabs (64 columns of D each) are BN rows apart.
template <typename T, int D>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const unsigned (&p)[BN / 16][4], const T* vt)
{
    fence_registers(o);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) wgmma_pv(o, p[kk], wgmma_desc(vt + kk * 16 * 64, BN * 128, 1024), T());
    wgmma_commit();
}

// The online softmax of one tile, as in rung 5: masks where the tile needs them, each row's new
// maximum m over its quad, alpha (what the terms held so far are multiplied by), the weights P
// in place of the scores, in fp32, and the row sums l of this thread's columns. Element e of
// n8 group j of s is row `row0` + 8 (e / 2), key `key0` + 8 j + 2 (lane % 4) + e % 2.
// A row's maximum and sum are each taken in CHAINS running values, combined at the end: one
// (rung 6) makes a chain of 16 dependent maxima and 32 dependent additions a row, each waiting
// for the last, in a warp that has no other warp of its scheduler to hide that behind (its
// partner warpgroup is multiplying); four (rung 7) make four shorter chains side by side.
template <int CHAINS>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 2], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                             int row0, int key0, int n, int causal, bool masked, float scale_log2)
{
    const int lane = threadIdx.x % 32;
    if (masked)
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) {
            const int key = key0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
            if (key >= n || (causal && key > row0 + 8 * (i % 4 / 2))) s[i] = -INFINITY;
        }
    float shift[2];  // exp2(s * scale_log2 - shift) is the weight of score s
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float chain[CHAINS];
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) chain[c] = m[h];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
            chain[j % CHAINS] = fmaxf(chain[j % CHAINS], fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
        float mx = chain[0];
#pragma unroll
        for (int c = 1; c < CHAINS; ++c) mx = fmaxf(mx, chain[c]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        shift[h] = mx == -INFINITY ? 0.0f : mx * scale_log2;  // -inf - -inf would be NaN
        alpha[h] = exp2_ftz(m[h] * scale_log2 - shift[h]);    // 1 exactly if mx == m
        m[h] = mx;
        l[h] *= alpha[h];
    }
    float sum[2][CHAINS];  // chain 0 starts from l, the others from 0
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum[0][c] = c ? 0.0f : l[0], sum[1][c] = c ? 0.0f : l[1];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        s[i] = exp2_ftz(fmaf(s[i], scale_log2, -shift[i % 4 / 2]));
        sum[i % 4 / 2][i / 4 % CHAINS] += s[i];
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] = sum[h][0];
#pragma unroll
        for (int c = 1; c < CHAINS; ++c) l[h] += sum[h][c];
    }
}

// P rounded to the input type and packed as the A operand of P V: 16 keys (two n8 groups of
// S) make one m64k16 fragment, in the order of mma.sync's A. Done only once the previous P V
// has landed: wgmma reads its A registers until then, and writing new values into them earlier
// would make ptxas serialise every wgmma.
template <typename T>
__device__ __forceinline__ void pack_p(unsigned (&p)[BN / 16][4], const float (&s)[BN / 2])
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
        for (int i = 0; i < 4; ++i) p[kk][i] = pack(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1], T());
}

// O *= alpha, row by row; skipped by a warp none of whose rows found a new maximum.
template <int R>
__device__ __forceinline__ void rescale(float (&o)[R], const float (&alpha)[2])
{
    if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f))
#pragma unroll
        for (int i = 0; i < R; ++i) o[i] *= alpha[i % 4 / 2];
}

// A consumer warpgroup's pass over a block of queries from i0: for its 64 queries (q: their
// first row in Q's slab 0; this thread's rows row0 and row0 + 8), each of `tiles` tiles of keys
// (the block's tiles it to it + tiles - 1 in the stages) scored, softmaxed and multiplied into
// o, with the row sums in l. Each issue takes a turn from the other consumer and hands it back.
// - Tile t's Q K^T is issued with tile t-1's P V, and the softmax of tile t runs while P V does.
// - The last tile's values past row n - 1 are the next head's (or TMA's zeros past the matrix):
//   both consumers zero them first, then meet, so that neither multiplies a value the other has
//   yet to zero.
// - Reload (rung 7): the turn is handed over after every issue (the next item's first issue
//   takes it), and Q and the last V stage are freed for the next item; rung 6's last issue of
//   consumer 1 keeps the turn, and its block ends with its last tile.
template <typename T, int D, int CHAINS, bool Reload>
__device__ __forceinline__ void consume_item(float (&o)[D / 2], float (&l)[2], const T* q, T* ks, T* vs, Barriers& bar,
                                             int it, int tiles, int i0, int row0, int n, int causal, float scale_log2)
{
    const int wg = threadIdx.x / 128;
    const bool leader = threadIdx.x % 128 == 0;
    float s[BN / 2], m[2] = {-INFINITY, -INFINITY}, alpha[2];
    unsigned p[BN / 16][4];
    // Tile t needs a mask where a key may be past the end, or (causal) after one of the rows.
    auto masked = [&](int t) { return (t + 1) * BN > n || (causal && (t + 1) * BN - 1 > i0 + 64 * wg); };
    auto hand_over = [&](int t) {
        if (Reload || t + 1 < tiles || wg == 0) barrier_arrive(TURN + 1 - wg, 128 * CONSUMERS);
    };
    auto k_landed = [&](int t, int stage) {  // tile t's Q K^T has landed: free its K, and Q after the last
        if (!leader) return;
        mbar_arrive(&bar.k_empty[stage]);
        if (Reload && t == tiles - 1) mbar_arrive(&bar.q_empty);
    };

    // Tile 0: Q K^T alone, then its softmax.
    mbar_wait(&bar.k_full[it % STAGES], it / STAGES % 2);
    barrier_sync(TURN + wg, 128 * CONSUMERS);
    issue_qk<T, D>(s, q, ks + it % STAGES * BN * D);
    hand_over(0);
    wgmma_wait<0>();
    fence_registers(s);
    k_landed(0, it % STAGES);
    softmax_tile<CHAINS>(s, m, l, alpha, row0, 0, n, causal, masked(0), scale_log2);
    pack_p<T>(p, s);

    for (int t = 1; t < tiles; ++t) {
        const int s1 = (it + t) % STAGES, s0 = (it + t - 1) % STAGES;  // tile t's stage, and tile t-1's
        mbar_wait(&bar.k_full[s1], (it + t) / STAGES % 2);
        mbar_wait(&bar.v_full[s0], (it + t - 1) / STAGES % 2);
        barrier_sync(TURN + wg, 128 * CONSUMERS);
        issue_qk<T, D>(s, q, ks + s1 * BN * D);
        issue_pv<T, D>(o, p, vs + s0 * BN * D);
        hand_over(t);
        wgmma_wait<1>();  // Q K^T has landed; P V may still be running
        fence_registers(s);
        k_landed(t, s1);
        softmax_tile<CHAINS>(s, m, l, alpha, row0, t * BN, n, causal, masked(t), scale_log2);
        wgmma_wait<0>();  // and now P V
        fence_registers(o);
        if (leader) mbar_arrive(&bar.v_empty[s0]);
        rescale(o, alpha);
        pack_p<T>(p, s);
    }

    // The last tile's P V, its values past row n - 1 zeroed first.
    const int last = tiles - 1, sl = (it + last) % STAGES;
    T* vt = vs + sl * BN * D;
    mbar_wait(&bar.v_full[sl], (it + last) / STAGES % 2);
    if (last * BN + BN > n) {
        const int valid = n - last * BN, chunks = (BN - valid) * D / 8;  // 16-byte pieces to zero
        for (int c = threadIdx.x; c < chunks; c += 128 * CONSUMERS) {
            const int row = valid + c / 8 % (BN - valid), slab = c / 8 / (BN - valid);
            reinterpret_cast<uint4*>(vt + slab * BN * 64 + row * 64)[c % 8] = make_uint4(0, 0, 0, 0);
        }
        fence_proxy_async();
        barrier_sync(ZEROED, 128 * CONSUMERS);
    }
    issue_pv<T, D>(o, p, vt);
    wgmma_wait<0>();
    fence_registers(o);
    if (Reload && leader) mbar_arrive(&bar.v_empty[sl]);
}

// Two consecutive elements of a row of O, in O's type: float32 (rung 6), or packed in the input
// type, rounded to nearest (rung 7, as SDPA writes it).
__device__ __forceinline__ void store_pair(float* out, float a, float b)
{
    *reinterpret_cast<float2*>(out) = make_float2(a, b);
}

template <typename T>
__device__ __forceinline__ void store_pair(T* out, float a, float b)
{
    *reinterpret_cast<unsigned*>(out) = pack(a, b, T());
}

// The end of a block of queries: l summed over the quad, then O = acc / l for this thread's two
// rows (row0 and row0 + 8) of the head whose first row is `head`, rows < n only.
template <int D, typename Out>
__device__ __forceinline__ void store_o(Out* O, const float (&o)[D / 2], const float (&l)[2], int head, int row0, int n)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float sum = l[h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int row = row0 + 8 * h;
        if (row >= n) continue;
        Out* out = O + (static_cast<long long>(head) + row) * D + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < D / 8; ++j) store_pair(out + 8 * j, o[4 * j + 2 * h] / sum, o[4 * j + 2 * h + 1] / sum);
    }
}
