// The tensor-core GEMM of rungs 2 and 3, written once for any block tile: cp.async into a
// ring of shared-memory stages, ldmatrix, mma.sync.m16n8k16 with fp32 accumulators. Each warp
// owns a 64x64 piece of the block's BM x BN output tile.
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
template <int BM, int BN, int BK, int STAGES>
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
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return;
    A += (size_t)by * BM * K;
    B += bx * BN;
    float acc[4][8][4] = {};             // 4 m16 tiles x 8 n8 tiles x 4 floats
    const int tiles = K / BK;

    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) load_tile<BM, BN, BK, THREADS>(As + s * T::A_SIZE, Bs + s * T::B_SIZE, A, B + (size_t)(s * BK) * N, N, K, s * BK);
        cp_async_commit();
    }
    for (int kt = 0; kt < tiles; ++kt) {
        // Tile kt has landed (at most STAGES-2 newer groups still pending), for every thread.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        // Refill the stage that tile kt-1 used: everyone finished it before the barrier above.
        int next = kt + STAGES - 1;
        if (next < tiles)
            load_tile<BM, BN, BK, THREADS>(As + (next % STAGES) * T::A_SIZE, Bs + (next % STAGES) * T::B_SIZE,
                                       A, B + (size_t)(next * BK) * N, N, K, next * BK);
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
            *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(c + 8 * (size_t)N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
// --8<-- [end:gemm]
