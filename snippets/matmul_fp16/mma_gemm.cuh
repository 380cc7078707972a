// The tensor-core GEMM of rungs 2, 3 and 8, written once for any block tile: cp.async into a
// ring of shared-memory stages, ldmatrix, mma.sync.m16n8k16 with fp32 accumulators. Each warp
// owns a 64x64 piece of the block's BM x BN output tile. Rung 8 asks for every edge guarded.
#pragma once
#include "tensor_core.cuh"  // cp_async16, ldmatrix_x4(_trans) and mma_16816, shared with attention

#define WARP_TILE 64

// Rows of the shared tiles are padded by 8 halves (16 bytes), so the 8 row addresses of one
// ldmatrix land in 8 different 16-byte bank groups: no conflicts.
template <int BM, int BN, int BK>
struct Tiles {
    static constexpr int A_STRIDE = BK + 8, B_STRIDE = BN + 8;
    static constexpr int A_SIZE = BM * A_STRIDE, B_SIZE = BK * B_STRIDE;
};

// --8<-- [start:load_tile]
// One k-tile of A (BM x BK) and B (BK x BN) into one stage, in 16-byte cp.async chunks.
template <int BM, int BN, int BK, int THREADS>
__device__ __forceinline__ void load_tile(half* As, half* Bs, const half* A, const half* B,
                                          int N, int K, int k0)
{
    using T = Tiles<BM, BN, BK>;
    for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS)
        cp_async16(As + (c / (BK / 8)) * T::A_STRIDE + (c % (BK / 8)) * 8,
                   A + (c / (BK / 8)) * K + k0 + (c % (BK / 8)) * 8);
    for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS)
        cp_async16(Bs + (c / (BN / 8)) * T::B_STRIDE + (c % (BN / 8)) * 8,
                   B + (c / (BN / 8)) * N + (c % (BN / 8)) * 8);
}
// --8<-- [end:load_tile]

// --8<-- [start:guarded]
// Eight halves from src into dst (16 bytes, aligned), of which the first `inside` lie in the
// matrix (all eight at 8 or more, none at 0 or less). A whole chunk of a row that starts on a
// 16-byte boundary goes by cp.async; any other is read a half at a time, zeros past the edge,
// and stored at once (the barrier before its tile is used covers both).
__device__ __forceinline__ void copy8(half* dst, const half* src, int inside, bool aligned)
{
    if (aligned && inside >= 8) {
        cp_async16(dst, src);
        return;
    }
    half v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = i < inside ? src[i] : __float2half(0.0f);
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
}

// load_tile for any shape: `rows` of A and `cols` of B are left from the tile's corner on.
// Rows of A (of B) start on 16-byte boundaries only where K (N) is a multiple of 8; the
// choice is the same for every thread of the launch.
template <int BM, int BN, int BK, int THREADS>
__device__ __forceinline__ void load_tile_guarded(half* As, half* Bs, const half* A, const half* B,
                                                  int rows, int cols, int N, int K, int k0)
{
    using T = Tiles<BM, BN, BK>;
    for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {
        const int r = c / (BK / 8), k = k0 + (c % (BK / 8)) * 8;
        copy8(As + r * T::A_STRIDE + (c % (BK / 8)) * 8, A + (size_t)r * K + k, r < rows ? K - k : 0, K % 8 == 0);
    }
    for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {
        const int r = c / (BN / 8), n = (c % (BN / 8)) * 8;
        copy8(Bs + r * T::B_STRIDE + n, B + (size_t)(k0 + r) * N + n, k0 + r < K ? cols - n : 0, N % 8 == 0);
    }
}

// Two results at c (columns n, n+1 of a row), of which the first `inside` lie in C: a float2
// where both do and the row's length is even (8-byte aligned), else one float at a time.
__device__ __forceinline__ void store2(float* c, float x, float y, bool row_inside, int inside, bool even)
{
    if (!row_inside || inside <= 0) return;
    if (even && inside >= 2) {
        *reinterpret_cast<float2*>(c) = make_float2(x, y);
        return;
    }
    c[0] = x;
    if (inside >= 2) c[1] = y;
}
// --8<-- [end:guarded]

// A warp's fragments for one 16-wide step of K: 4 of A (its 64 rows), 4 x2 of B (64 columns).
template <typename T>
__device__ __forceinline__ void load_fragments(unsigned (&a)[4][4], unsigned (&b)[4][4], const half* as,
                                               const half* bs, int kk, int wm, int wn, int lane)
{
#pragma unroll
    for (int i = 0; i < 4; ++i)  // rows wm+16i+(lane%16), k columns kk + 8*(lane/16)
        ldmatrix_x4(a[i], as + (wm + 16 * i + lane % 16) * T::A_STRIDE + kk + (lane / 16) * 8);
#pragma unroll
    for (int j = 0; j < 4; ++j)  // k rows kk+(lane%16), columns wn+16j + 8*(lane/16)
        ldmatrix_x4_trans(b[j], bs + (kk + lane % 16) * T::B_STRIDE + wn + 16 * j + (lane / 16) * 8);
}

// --8<-- [start:gemm]
// ANY: any M, N and K, every edge guarded (rung 8); otherwise whole tiles only (rungs 2 and 3).
template <int BM, int BN, int BK, int STAGES, bool ANY = false>
__device__ __forceinline__ void mma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    using T = Tiles<BM, BN, BK>;
    constexpr int WARPS_N = BN / WARP_TILE, THREADS = 32 * (BM / WARP_TILE) * WARPS_N;
    extern __shared__ __align__(128) half smem[];
    half* As = smem;                      // STAGES tiles of A, then STAGES tiles of B
    half* Bs = smem + STAGES * T::A_SIZE;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / WARPS_N) * WARP_TILE, wn = (warp % WARPS_N) * WARP_TILE;
    // gridDim.y stops at 65535: rows of tiles past it go on along z (and the last z-slice's
    // extra blocks leave). Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
    // Inside a tile (load_tile) they stay int, as fast as before: BM x K and BK x N
    // stay below 2^31 (the launch checks); B is passed moved down to the tile in 64 bits.
    // The guarded loads (any shape) widen every row offset.
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= (ANY ? (M + BM - 1) / BM : M / BM)) return;
    const int rows = M - by * BM, cols = N - bx * BN;  // of C, from this tile's corner on
    A += (size_t)by * BM * K;
    B += bx * BN;
    float acc[4][8][4] = {};             // 4 m16 tiles x 8 n8 tiles x 4 floats
    const int tiles = ANY ? (K + BK - 1) / BK : K / BK;
    auto stage_in = [&](int stage, int kt) {  // k-tile kt of A and B into a stage of the ring
        if constexpr (ANY)
            load_tile_guarded<BM, BN, BK, THREADS>(As + stage * T::A_SIZE, Bs + stage * T::B_SIZE, A, B, rows, cols, N, K,
                                                   kt * BK);
        else
            load_tile<BM, BN, BK, THREADS>(As + stage * T::A_SIZE, Bs + stage * T::B_SIZE, A, B + (size_t)(kt * BK) * N, N, K,
                                           kt * BK);
    };

    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) stage_in(s, s);
        cp_async_commit();
    }
    for (int kt = 0; kt < tiles; ++kt) {
        // Tile kt has landed (at most STAGES-2 newer groups still pending), for every thread.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        // Refill the stage that tile kt-1 used: everyone finished it before the barrier above.
        int next = kt + STAGES - 1;
        if (next < tiles) stage_in(next % STAGES, next);
        cp_async_commit();

        const half* as = As + (kt % STAGES) * T::A_SIZE;
        const half* bs = Bs + (kt % STAGES) * T::B_SIZE;
        // Fragments are double-buffered in registers: step s+1's ldmatrix are issued before
        // step s's MMAs, so shared-memory latency hides behind tensor-core work.
        unsigned a[2][4][4], b[2][4][4];
        load_fragments<T>(a[0], b[0], as, bs, 0, wm, wn, lane);
#pragma unroll
        for (int step = 0; step < BK / 16; ++step) {
            if (step + 1 < BK / 16)
                load_fragments<T>(a[(step + 1) % 2], b[(step + 1) % 2], as, bs, 16 * (step + 1), wm, wn, lane);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    mma_16816(acc[i][j], a[step % 2][i], b[step % 2][j / 2][(j % 2) * 2],
                              b[step % 2][j / 2][(j % 2) * 2 + 1], half());
        }
    }
    cp_async_wait<0>();

    // Accumulator layout of m16n8: c0,c1 at (lane/4, 2*(lane%4)+{0,1}), c2,c3 eight rows down.
    C += (size_t)(by * BM + wm) * N + bx * BN + wn;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            float* c = C + (size_t)(16 * i + lane / 4) * N + 8 * j + 2 * (lane % 4);
            if constexpr (ANY) {
                const int r = wm + 16 * i + lane / 4, inside = cols - (wn + 8 * j + 2 * (lane % 4));
                store2(c, acc[i][j][0], acc[i][j][1], r < rows, inside, N % 2 == 0);
                store2(c + 8 * (size_t)N, acc[i][j][2], acc[i][j][3], r + 8 < rows, inside, N % 2 == 0);
            } else {
                *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<float2*>(c + 8 * (size_t)N) = make_float2(acc[i][j][2], acc[i][j][3]);
            }
        }
}
// --8<-- [end:gemm]
