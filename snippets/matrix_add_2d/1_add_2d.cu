// Hello CUDA in two dimensions: a 2D grid of 16 x 16 blocks over a row-major matrix. x walks the
// columns (the fastest-varying index in memory), y the rows, so a warp reads 16 consecutive
// floats of two rows. Both guards matter: the grid is rounded up in each dimension.
// Two limits of real sizes: row * cols passes 2^31 - 1 in a matrix of 2^31 elements, so the
// index is 64-bit (widened before the multiply); and gridDim.y stops at 65535 blocks, so past
// 65535 x 16 rows each thread goes on to every (gridDim.y * 16)-th row after its own.

// --8<-- [start:kernel]
extern "C" __global__ void matrix_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int rows, int cols)
{
    long long col = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long row = blockIdx.y * (long long)blockDim.y + threadIdx.y;
    long long row_stride = (long long)gridDim.y * blockDim.y;
    for (; row < rows && col < cols; row += row_stride) {
        long long i = row * cols + col;
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
