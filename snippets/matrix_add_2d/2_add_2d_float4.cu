// Rung 2: the add is elementwise and both matrices are dense and row-major, so (row, col) only
// numbers the elements: this rung adds them as one flat array of rows * cols floats. That drops
// rung 1's per-element row and column arithmetic, keeps every warp on one contiguous run of
// memory (a 16 x 16 block splits each warp over two rows), and lets every load move 16 bytes.
// cudaMalloc returns 256-byte aligned buffers, so the flat float4 views are aligned whatever
// cols is: a row of 2049 floats does not start on a float4, the flat array does not care.
// Each thread loads PER_THREAD float4s of a and of b before it adds any, blockDim.x float4s
// apart, so that every load instruction of a warp reads 512 contiguous bytes and more bytes are
// in flight per thread (the one-shot shape of torch.add and of the vector-add entry's Triton add).
// The rows * cols % 4 floats past the last whole float4 are added one at a time by block 0.
// Every index is 64-bit; the launch caps the grid at 2^31 - 1 blocks (2^41 floats).

// --8<-- [start:kernel]
#define PER_THREAD 2  // float4s per thread and per array; launch() covers blockDim.x * 2 float4s a block

extern "C" __global__ void matrix_add_float4(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ c, long long rows, long long cols)
{
    const long long n = rows * cols;
    const long long n4 = n / 4;  // whole float4s
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    const long long first = blockIdx.x * (long long)(blockDim.x * PER_THREAD) + threadIdx.x;

    float4 x[PER_THREAD], y[PER_THREAD];
#pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) {  // every load is issued before any add waits on one
        long long i = first + (long long)k * blockDim.x;
        if (i < n4) {
            x[k] = a4[i];
            y[k] = b4[i];
        }
    }
#pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) {
        long long i = first + (long long)k * blockDim.x;
        if (i < n4) {
            c4[i] = make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w);
        }
    }
    // The tail that does not fill a float4: at most 3 floats.
    long long i = 4 * n4 + threadIdx.x;
    if (blockIdx.x == 0 && i < n) {
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
