// What every variant computes: y[i] = p(x[j]), where j mirrors i within its tile of 256
// elements (the last tile may be shorter) and p(v) = 1 + v/2 + v^2/4 + v^3/8.
#pragma once

#define TILE 256

// The tile's length: TILE, or what is left at the end of the array.
__device__ __forceinline__ int tile_length(int start, int n)
{
    return min(TILE, n - start);
}
