// Rung 7: the row is read once, into registers, with 16-byte loads; the statistics come from the
// registers and the output is written from them. One read and one write of the data: the least
// traffic softmax can have. A block covers rows of up to 1024 threads x 32 floats = 32768.
#include "row_registers.cuh"

#define VEC 8  // float4 loads per thread

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(1024)
softmax_float4_registers(const float* x, float* y, int rows, int cols)
{
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    // Rows start 16-byte aligned only when cols is a multiple of 4; otherwise load one by one.
    bool vector = cols % 4 == 0;
    float v[VEC][4];
    load_chunk(v, in, 0, cols, vector);
    MaxSum s = block_reduce(chunk_stats(v, Exp()));
    store_chunk(out, v, s, 0, cols, vector, Exp());
}
// --8<-- [end:kernel]
