// Rung 7: warp tiling. The block's 128x128 tile is split into eight 32x64 warp tiles, and a
// thread's 8x8 results are four 4x4 pieces spread across its warp's tile. A warp then reads
// only 4 distinct float4 of A and 8 of B per step (one 128-byte shared-memory wavefront
// each) instead of 16 of B, and A's transposed tile is padded by 4 floats so that storing it
// hits 32 different banks. Needs M and N multiples of 128 and K a multiple of 8.
#define BM 128
#define BN 128
#define BK 8
#define PAD 4
#define THREADS 256

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS)
matmul_warptile(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    // Warps form a 4x2 grid of 32x64 tiles; lanes an 8x4 grid inside their warp's tile.
    const int row0 = (warp / 2) * 32 + (lane / 8) * 4;   // rows row0..+3 and row0+16..+3
    const int col0 = (warp % 2) * 64 + (lane % 8) * 4;   // columns col0..+3 and col0+32..+3
    const int a_row = t / 2, a_col = 4 * (t % 2), b_row = t / 32, b_col = 4 * (t % 32);
    // gridDim.y stops at 65535: rows of tiles past it go on along z (and the last z-slice's
    // extra blocks leave). Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return;
    A += (size_t)by * BM * K;
    B += bx * BN;
    C += (size_t)by * BM * N + bx * BN;
    float acc[8][8] = {{0.0f}};
    float a[8], b[8];
    for (int k0 = 0; k0 < K; k0 += BK) {
        float4 va = *reinterpret_cast<const float4*>(A + (size_t)a_row * K + a_col);
        As[a_col + 0][a_row] = va.x;
        As[a_col + 1][a_row] = va.y;
        As[a_col + 2][a_row] = va.z;
        As[a_col + 3][a_row] = va.w;
        *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = *reinterpret_cast<const float4*>(B + (size_t)b_row * N + b_col);
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&As[k][row0]);
            *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&As[k][row0 + 16]);
            *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&Bs[k][col0]);
            *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&Bs[k][col0 + 32]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int row = row0 + (i % 4) + (i / 4) * 16;
        *reinterpret_cast<float4*>(C + (size_t)row * N + col0) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(C + (size_t)row * N + col0 + 32) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
// --8<-- [end:kernel]
