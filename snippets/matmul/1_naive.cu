// Rung 1: one thread per element of C, as a first CUDA matmul is written. threadIdx.x walks
// down a column of C, so the 32 threads of a warp read 32 different rows of A: 32 separate
// memory transactions where one would do.
// Real sizes: indices are 64-bit (row * K passes 2^31 - 1 for an A of 2^31 floats), and since
// gridDim.y stops at 65535 blocks, columns of blocks past it go on along z.
// --8<-- [start:kernel]
extern "C" __global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K)
{
    long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long col = (blockIdx.z * (long long)gridDim.y + blockIdx.y) * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[(long long)k * N + col];
        C[row * N + col] = sum;
    }
}
// --8<-- [end:kernel]
