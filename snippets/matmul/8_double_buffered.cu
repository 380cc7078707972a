// Rung 8: double buffering. Rung 7 waits twice per tile: for global memory, then at the
// barrier. Here the next tile's floats are loaded into registers while the current tile is
// multiplied, then stored into a second shared-memory buffer, so one barrier per tile is
// enough and memory latency hides behind 512 FMAs per thread. Same warp-tile layout as rung 7.
// Needs M and N multiples of 128 and K a multiple of 8.
#define BM 128
#define BN 128
#define BK 8
#define PAD 4
#define THREADS 256

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS, 2)
matmul_double_buffered(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int row0 = (warp / 2) * 32 + (lane / 8) * 4;
    const int col0 = (warp % 2) * 64 + (lane % 8) * 4;
    const int a_row = t / 2, a_col = 4 * (t % 2), b_row = t / 32, b_col = 4 * (t % 32);
    // gridDim.y stops at 65535: rows of tiles past it go on along z (and the last z-slice's
    // extra blocks leave). Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
    // The step down B stays int (64-bit made ptxas issue the next tile's loads late,
    // 8% slower): 8 x N stays below 2^31 (the launch checks).
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return;
    A += (size_t)by * BM * K + (size_t)a_row * K + a_col;
    B += bx * BN + (size_t)b_row * N + b_col;
    C += (size_t)by * BM * N + bx * BN;
    float acc[8][8] = {{0.0f}};
    float a[8], b[8];

    float4 va = *reinterpret_cast<const float4*>(A);
    float4 vb = *reinterpret_cast<const float4*>(B);
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[buf][a_col + 0][a_row] = va.x;
        As[buf][a_col + 1][a_row] = va.y;
        As[buf][a_col + 2][a_row] = va.z;
        As[buf][a_col + 3][a_row] = va.w;
        *reinterpret_cast<float4*>(&Bs[buf][b_row][b_col]) = vb;
        // One barrier per tile: the buffer written here was last read two tiles ago, before
        // the previous barrier.
        __syncthreads();
        if (k0 + BK < K) {  // the next tile's loads are in flight during the FMAs below
            A += BK;
            B += BK * N;
            va = *reinterpret_cast<const float4*>(A);
            vb = *reinterpret_cast<const float4*>(B);
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&As[buf][k][row0]);
            *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&As[buf][k][row0 + 16]);
            *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&Bs[buf][k][col0]);
            *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&Bs[buf][k][col0 + 32]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int row = row0 + (i % 4) + (i / 4) * 16;
        *reinterpret_cast<float4*>(C + (size_t)row * N + col0) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(C + (size_t)row * N + col0 + 32) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
// --8<-- [end:kernel]
