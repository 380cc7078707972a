// Rung 1: one thread per element of C, as a first CUDA matmul is written. threadIdx.x walks
// down a column of C, so the 32 threads of a warp read 32 different rows of A: 32 separate
// memory transactions where one would do.
// --8<-- [start:kernel]
extern "C" __global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
// --8<-- [end:kernel]
