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
