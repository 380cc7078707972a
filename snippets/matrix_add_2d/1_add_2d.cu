// Hello CUDA in two dimensions: a 2D grid of 16 x 16 blocks over a row-major matrix. x walks the
// columns (the fastest-varying index in memory), y the rows, so a warp reads 16 consecutive
// floats of two rows. Both guards matter: the grid is rounded up in each dimension.

// --8<-- [start:kernel]
extern "C" __global__ void matrix_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        int i = row * cols + col;
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
