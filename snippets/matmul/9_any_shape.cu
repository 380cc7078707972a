// Rung 9: any shape. Rungs 4 to 8 take whole tiles only, so a 4097 x 4095 x 4093 product is
// refused outright. This is rung 8 with its edges guarded: a load past M, N or K reads 0 (which
// adds nothing to a sum), a store past M or N is skipped. Rows whose length is a multiple of 4
// floats (16 bytes) keep rung 8's float4 loads and stores; any other length is loaded one float
// at a time, since its rows no longer start on a 16-byte boundary. Which path runs is the same
// for every thread of the launch, so the branch costs almost nothing.
#include "warp_tile.cuh"

// The four floats p[0..3], whose indices along their row are at..at+3: zero past `end`, and
// everywhere when the row itself is outside the matrix. `vector`: p is 16-byte aligned.
__device__ __forceinline__ float4 load4(const float* p, int at, int end, bool inside, bool vector)
{
    if (vector)
        return inside && at < end ? *reinterpret_cast<const float4*>(p) : make_float4(0, 0, 0, 0);
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = inside && at + i < end ? p[i] : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS, 2)
matmul_any_shape(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x, row0 = warp_row(t), col0 = warp_col(t);
    const Float4Slot s = float4_slot(t);
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;  // y-blocks past 65535 on z
    const int m0 = by * BM, n0 = bx * BN;
    if (m0 >= M) return;
    const bool a_vector = K % 4 == 0, b_vector = N % 4 == 0, a_inside = m0 + s.a_row < M;
    // Both sources move by pointer steps (a multiply per tile would delay the loads): A along
    // its row, B down its columns, 8 rows at a time.
    const float* a_src = A + (size_t)(m0 + s.a_row) * K + s.a_col;  // read only where a_inside
    const float* b_src = B + (size_t)s.b_row * N + n0 + s.b_col;
    const size_t b_step = (size_t)BK * N;
    float a[TM], b[TN];
    float acc[TM][TN] = {{0.0f}};

    float4 va = load4(a_src, s.a_col, K, a_inside, a_vector);
    float4 vb = load4(b_src, n0 + s.b_col, N, s.b_row < K, b_vector);
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        store_transposed(As[buf], s.a_row, s.a_col, va);
        *reinterpret_cast<float4*>(&Bs[buf][s.b_row][s.b_col]) = vb;
        __syncthreads();
        if (k0 + BK < K) {  // the next tile's loads are in flight during the FMAs below
            a_src += BK;
            b_src += b_step;
            va = load4(a_src, k0 + BK + s.a_col, K, a_inside, a_vector);
            vb = load4(b_src, n0 + s.b_col, N, k0 + BK + s.b_row < K, b_vector);
        }
        multiply_warp_tile(acc, a, b, As[buf], Bs[buf], row0, col0);
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = m0 + row0 + (i % 4) + (i / 4) * 16;
        if (row >= M) continue;
        float* out = C + (size_t)row * N;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int col = n0 + col0 + 32 * h;
            const float* v = &acc[i][4 * h];
            if (b_vector && col < N) {
                *reinterpret_cast<float4*>(out + col) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N) out[col + j] = v[j];
            }
        }
    }
}
// --8<-- [end:kernel]
