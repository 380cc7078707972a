// Rung 2: rung 1's thread loads one float of a (4 bytes) and is done, so little of a is in
// flight at once and every byte pays for a thread's index arithmetic. Here a thread moves a
// float4 of a row (the nx * ny rows of nz floats along z) and does so for ROWS rows, loading all
// of them before it adds any. The grid is rung 1's: x walks the row's float4s, y the rows' y
// (ROWS of them per thread, blockDim.y apart, so a block covers consecutive rows), z walks x;
// b[x, y] and c[x] are loaded once per row and per thread, and added in rung 1's order,
// (a + b) + c. A row starts on a 16-byte boundary only when its first element does: with nz
// not a multiple of 4, the first floats of a row (up to 3, its head) and the last (its tail)
// are added one at a time, so every float4 load is aligned (cudaMalloc aligns a to 256 bytes).
// Indices are 64-bit; nx, ny and nz are ints, and the grid's y and z are limited to 65535
// blocks: the launch says Unsupported past either.

// --8<-- [start:kernel]
#define ROWS 4  // rows per thread; launch() covers blockDim.y * ROWS values of y a block

extern "C" __global__ void add_broadcast_float4(const float* __restrict__ a, const float* __restrict__ b,
                                                const float* __restrict__ c, float* __restrict__ out,
                                                int nx, int ny, int nz)
{
    long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // this thread's float4 of a row
    int y0 = blockIdx.y * (blockDim.y * ROWS) + threadIdx.y;
    int x = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx) {
        return;
    }
    const float4* a4 = reinterpret_cast<const float4*>(a);
    float4* out4 = reinterpret_cast<float4*>(out);
    const float cx = c[x];

    float4 v[ROWS];
    float bv[ROWS];
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {  // every row's loads before any add waits on one
        int y = y0 + k * blockDim.y;
        if (y < ny) {
            size_t row = (size_t)x * ny + y, base = row * nz;
            int head = min((int)(-base & 3), nz);  // floats before the row's first 16-byte boundary
            bv[k] = b[row];
            if (j < (nz - head) / 4) {
                v[k] = a4[(base + head) / 4 + j];
            }
        }
    }
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
        int y = y0 + k * blockDim.y;
        if (y < ny) {
            size_t row = (size_t)x * ny + y, base = row * nz;
            int head = min((int)(-base & 3), nz);
            int body = (nz - head) / 4;        // whole, aligned float4s
            int tail = nz - head - 4 * body;   // floats after the last of them: at most 3
            if (j < body) {
                float4 s = v[k];
                out4[(base + head) / 4 + j] = make_float4((s.x + bv[k]) + cx, (s.y + bv[k]) + cx,
                                                          (s.z + bv[k]) + cx, (s.w + bv[k]) + cx);
            }
            if (j < head) {
                size_t i = base + j;
                out[i] = (a[i] + bv[k]) + cx;
            }
            if (j < tail) {
                size_t i = base + head + 4 * (size_t)body + j;
                out[i] = (a[i] + bv[k]) + cx;
            }
        }
    }
}
// --8<-- [end:kernel]
