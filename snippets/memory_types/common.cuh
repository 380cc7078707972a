// What every variant computes: y[i] = p(x[j]), where j mirrors i within its tile of 256
// elements (the last tile may be shorter) and p(v) = 1 + v/2 + v^2/4 + v^3/8.
#pragma once

#define TILE 256

// The tile's length: TILE, or what is left at the end of the array. Positions are 64-bit, so
// that arrays past 2^31 - 1 elements work.
__device__ __forceinline__ int tile_length(long long start, long long n)
{
    return (int)min((long long)TILE, n - start);
}
