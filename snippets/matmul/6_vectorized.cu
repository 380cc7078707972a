// Rung 6: 16-byte loads and stores. Global memory is read as float4, and A's tile is stored
// transposed (As[k][m]) so that a thread's 8 values of A are two float4 reads of shared memory,
// like its 8 values of B. Needs M and N multiples of 128 and K a multiple of 8.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS (BM * BN / (TM * TN))

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS)
matmul_vectorized(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x;
    const int tcol = t % (BN / TN), trow = t / (BN / TN);
    // Each thread moves one float4 of A (row t/2, columns 4*(t%2)..) and one of B per tile.
    const int a_row = t / 2, a_col = 4 * (t % 2), b_row = t / 32, b_col = 4 * (t % 32);
    // gridDim.y stops at 65535: rows of tiles past it go on along z (and the last z-slice's
    // extra blocks leave). Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return;
    A += (size_t)by * BM * K;
    B += bx * BN;
    C += (size_t)by * BM * N + bx * BN;
    float acc[TM][TN] = {{0.0f}};
    float a[TM], b[TN];
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
        for (int k = 0; k < BK; ++k) {
            *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&As[k][trow * TM]);
            *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&As[k][trow * TM + 4]);
            *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN]);
            *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN + 4]);
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(C + (size_t)(trow * TM + i) * N + tcol * TN + j) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
// --8<-- [end:kernel]
