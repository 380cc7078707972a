// Rung 2: the instructions underneath WMMA, used directly, with a pipeline in front of them.
// - cp.async copies global memory straight into shared memory without passing through
//   registers, and a 4-stage ring of tiles keeps three tiles in flight while one is used.
// - ldmatrix loads a warp's 16x16 fragments from shared memory in one instruction each
//   (transposing B's on the way), and mma.sync.m16n8k16 multiplies them.
// - Each of the 4 warps owns a 64x64 piece of the 128x128 output: 128 fp32 accumulators per
//   thread, 32 MMAs per 16-wide step of K for 8 fragment loads.
// Needs M and N multiples of 128 and K a multiple of 32.
#include <cuda_fp16.h>

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define THREADS 128
#define A_STRIDE (BK + 8)   // halves per row of A's tile: 80 bytes, so ldmatrix's 8 rows
#define B_STRIDE (BN + 8)   // ... and B's 272 bytes land in 8 different bank groups
#define A_TILE (BM * A_STRIDE)
#define B_TILE (BK * B_STRIDE)

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const half* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const half* p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// --8<-- [start:kernel]
// One k-tile of A (128x32) and B (32x128) into stage `s`: 512 16-byte chunks each, 4 per thread.
__device__ __forceinline__ void load_tile(half* As, half* Bs, const half* A, const half* B,
                                          int N, int K, int k0)
{
    for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS)
        cp_async16(As + (c / 4) * A_STRIDE + (c % 4) * 8, A + (c / 4) * K + k0 + (c % 4) * 8);
    for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS)
        cp_async16(Bs + (c / 16) * B_STRIDE + (c % 16) * 8, B + (k0 + c / 16) * N + (c % 16) * 8);
}

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_mma_pipelined(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) half smem[];
    half* As = smem;                      // STAGES tiles of A, then STAGES tiles of B
    half* Bs = smem + STAGES * A_TILE;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / 2) * 64, wn = (warp % 2) * 64;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    float acc[4][8][4] = {};             // 4 m16 tiles x 8 n8 tiles x 4 floats
    const int tiles = K / BK;

    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) load_tile(As + s * A_TILE, Bs + s * B_TILE, A, B, N, K, s * BK);
        asm volatile("cp.async.commit_group;\n");
    }
    for (int kt = 0; kt < tiles; ++kt) {
        // Tile kt has landed (at most STAGES-2 newer groups still pending), for every thread.
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
        __syncthreads();
        // Refill the stage that tile kt-1 used: everyone finished it before the barrier above.
        int next = kt + STAGES - 1;
        if (next < tiles)
            load_tile(As + (next % STAGES) * A_TILE, Bs + (next % STAGES) * B_TILE, A, B, N, K, next * BK);
        asm volatile("cp.async.commit_group;\n");

        const half* as = As + (kt % STAGES) * A_TILE;
        const half* bs = Bs + (kt % STAGES) * B_TILE;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[4][4], b[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)  // rows wm+16i+(lane%16), k columns kk + 8*(lane/16)
                ldmatrix_x4(a[i], as + (wm + 16 * i + lane % 16) * A_STRIDE + kk + (lane / 16) * 8);
#pragma unroll
            for (int j = 0; j < 4; ++j)  // k rows kk+(lane%16), columns wn+16j + 8*(lane/16)
                ldmatrix_x4_trans(b[j], bs + (kk + lane % 16) * B_STRIDE + wn + 16 * j + (lane / 16) * 8);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    mma_16816(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n");

    // Accumulator layout of m16n8: c0,c1 at (lane/4, 2*(lane%4)+{0,1}), c2,c3 eight rows down.
    C += (blockIdx.y * BM + wm) * N + blockIdx.x * BN + wn;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            float* c = C + (16 * i + lane / 4) * N + 8 * j + 2 * (lane % 4);
            *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(c + 8 * N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
// --8<-- [end:kernel]
