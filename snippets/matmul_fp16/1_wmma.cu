// Rung 1: tensor cores through WMMA, CUDA's warp-level matrix API. A warp multiplies 16x16x16
// fp16 fragments into fp32 accumulators in one instruction sequence. Blocks of 256 threads
// stage 128x32 tiles of A and 32x128 tiles of B in shared memory (rows padded by 8 halves so
// that fragment loads spread over the banks); each of the 8 warps owns a 32x64 piece of the
// 128x128 output. Needs M and N multiples of 128 and K a multiple of 32.
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define PAD 8
#define THREADS 256

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS)
matmul_wmma(const half* A, const half* B, float* C, int M, int N, int K)
{
    __shared__ __align__(32) half As[BM][BK + PAD];
    __shared__ __align__(32) half Bs[BK][BN + PAD];
    const int t = threadIdx.x, warp = t / 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 64;  // this warp's 32x64 piece
    // gridDim.y stops at 65535: rows of tiles past it go on along z (and the last z-slice's
    // extra blocks leave). Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
    // Inside a tile they stay int, as fast as before: 128 x K and 32 x N stay below
    // 2^31 (the launch checks); B moves down a tile at a time in 64 bits.
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return;
    A += (size_t)by * BM * K;
    B += bx * BN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += BK, B += (size_t)BK * N) {
        // 16-byte copies: A's tile is 128 rows of 4 chunks, B's 32 rows of 16 chunks.
        for (int c = t; c < BM * BK / 8; c += THREADS)
            *reinterpret_cast<uint4*>(&As[c / 4][(c % 4) * 8]) =
                *reinterpret_cast<const uint4*>(A + (c / 4) * K + k0 + (c % 4) * 8);
        for (int c = t; c < BK * BN / 8; c += THREADS)
            *reinterpret_cast<uint4*>(&Bs[c / 16][(c % 16) * 8]) =
                *reinterpret_cast<const uint4*>(B + (c / 16) * N + (c % 16) * 8);
        __syncthreads();
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[4];
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[wm + 16 * i][kk], BK + PAD);
            for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][wn + 16 * j], BN + PAD);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    C += (size_t)(by * BM + wm) * N + bx * BN + wn;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j)
            wmma::store_matrix_sync(C + (size_t)(16 * i) * N + 16 * j, acc[i][j], N, wmma::mem_row_major);
}
// --8<-- [end:kernel]
