// The block tile of rungs 5 to 9: 256 threads compute a 128x128 tile of C, 8x8 results each,
// stepping along K 8 at a time.
#pragma once

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS (BM * BN / (TM * TN))

// Moves A, B and C to this block's tile: its rows of A, its columns of B. gridDim.y stops at
// 65535: rows of tiles past it go on along z, and the last z-slice's extra blocks leave (false).
// Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
__device__ __forceinline__ bool to_block_tile(const float*& A, const float*& B, float*& C, int M, int N, int K)
{
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return false;
    A += (size_t)by * BM * K;
    B += bx * BN;
    C += (size_t)by * BM * N + bx * BN;
    return true;
}

// From rung 6 on, each thread moves one float4 of A's 128x8 tile (row t/2, columns 4*(t%2)..)
// and one of B's 8x128 tile (row t/32, columns 4*(t%32)..) per tile.
struct Float4Slot {
    int a_row, a_col, b_row, b_col;
};

__device__ __forceinline__ Float4Slot float4_slot(int t)
{
    return {t / 2, 4 * (t % 2), t / 32, 4 * (t % 32)};
}

// A's tile is stored transposed (As[k][m]) so that a thread's values of A are float4 reads of
// shared memory: the float4 v of A's row `row`, columns col..col+3, goes down a column of As.
// Width: the length of As's rows, padded from rung 7 on.
template <int Width>
__device__ __forceinline__ void store_transposed(float (&As)[BK][Width], int row, int col, float4 v)
{
    As[col + 0][row] = v.x;
    As[col + 1][row] = v.y;
    As[col + 2][row] = v.z;
    As[col + 3][row] = v.w;
}

// Rungs 6 and 7: this thread's float4s of the tiles at A and B, into shared memory (rungs 8 and 9
// hold them in registers for a tile first).
template <int Width>
__device__ __forceinline__ void load_tiles(float (&As)[BK][Width], float (&Bs)[BK][BN], const float* A, const float* B,
                                           int N, int K)
{
    const Float4Slot s = float4_slot(threadIdx.x);
    store_transposed(As, s.a_row, s.a_col, *reinterpret_cast<const float4*>(A + (size_t)s.a_row * K + s.a_col));
    *reinterpret_cast<float4*>(&Bs[s.b_row][s.b_col]) = *reinterpret_cast<const float4*>(B + (size_t)s.b_row * N + s.b_col);
}
