// Shared by rungs 10 to 12: whole runs of bytes between global and shared memory, copied by
// the TMA (Hopper's copy engine) with no thread touching them. sm_90a only.
#pragma once
#include "hopper.cuh"  // smem_addr, mbarriers, fence_proxy_async

// Global to shared memory, completing on `bar`; both addresses and `bytes` multiples of 16.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

// --8<-- [start:pieces]
// One thread's start of a load of float4s [0, n4) of `src` into the same places of `dst`, in
// `pieces` bulk copies of `piece` float4s (the last short or empty), copy p completing on
// landed[p], which this initialises: a block barrier must follow before any thread waits on one.
template <typename T>  // float or float4
__device__ __forceinline__ void bulk_load_pieces_from(float4* dst, const T* src, int n4, int pieces, int piece,
                                                      uint64_t* landed)
{
    constexpr int per_float4 = sizeof(float4) / sizeof(T);  // elements of src
    for (int p = 0; p < pieces; p++) mbar_init(&landed[p], 1);
    mbar_init_fence();
    for (int p = 0; p < pieces; p++) {
        int lo = min(n4, p * piece), bytes = 16 * (min(n4, lo + piece) - lo);
        mbar_expect_bytes(&landed[p], bytes);
        if (bytes > 0) bulk_load(dst + lo, src + per_float4 * lo, bytes, &landed[p]);
    }
}

// What kernels call: plain functions, not the template. nvcc lays out the static __shared__
// arrays of a kernel that calls a template after those of the functions it calls, which would
// move rung 11's `landed` behind block_reduce's arrays and change its machine code.
__device__ __forceinline__ void bulk_load_pieces(float4* dst, const float* src, int n4, int pieces, int piece,
                                                 uint64_t* landed)
{
    bulk_load_pieces_from(dst, src, n4, pieces, piece, landed);
}

__device__ __forceinline__ void bulk_load_pieces(float4* dst, const float4* src, int n4, int pieces, int piece,
                                                 uint64_t* landed)
{
    bulk_load_pieces_from(dst, src, n4, pieces, piece, landed);
}
// --8<-- [end:pieces]

// Shared to global memory, as a bulk group of its own. What threads wrote to the source needs
// fence_proxy_async first; the block must not reuse the source, nor exit, before the TMA has
// read it (bulk_read_wait).
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                 "cp.async.bulk.commit_group;\n"
                 ::"l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
}

// Wait until at most `Pending` of this thread's bulk stores still have to read their source.
template <int Pending>
__device__ __forceinline__ void bulk_read_wait()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(Pending) : "memory");
}
