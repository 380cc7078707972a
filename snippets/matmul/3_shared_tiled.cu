// Rung 3: the foundations guide's 16x16 shared-memory tiles. A block stages a 16x16 tile of A
// and of B in shared memory, then every thread reads them 16 times: each float comes from
// global memory once per block instead of once per thread. Tiles past the matrix edge are
// filled with zeros, so any M, N and K work. (64-bit indices, and rows of blocks past
// gridDim.y's 65535 along z, as in rung 1.)
#define TILE 16

// --8<-- [start:kernel]
extern "C" __global__ void matmul_shared_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    long long row = (blockIdx.z * (long long)gridDim.y + blockIdx.y) * TILE + ty;
    long long col = blockIdx.x * (long long)TILE + tx;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // the tile is complete before anyone reads it
        for (int k = 0; k < TILE; ++k) sum += As[ty][k] * Bs[k][tx];
        __syncthreads();  // everyone is done with the tile before it is overwritten
    }
    if (row < M && col < N) C[row * N + col] = sum;
}
// --8<-- [end:kernel]
