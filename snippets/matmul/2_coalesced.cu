// Rung 2: the same loop with the thread-to-element map swapped. threadIdx.x now walks along a
// row of C, so a warp reads one element of A (a broadcast) and 32 consecutive floats of B, and
// writes 32 consecutive floats of C. (64-bit indices, and rows of blocks past gridDim.y's
// 65535 along z, as in rung 1.)
// --8<-- [start:kernel]
extern "C" __global__ void matmul_coalesced(const float* A, const float* B, float* C, int M, int N, int K)
{
    long long col = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long row = (blockIdx.z * (long long)gridDim.y + blockIdx.y) * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[(long long)k * N + col];
        C[row * N + col] = sum;
    }
}
// --8<-- [end:kernel]
