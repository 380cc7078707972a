// Hopper's asynchronous machinery, written once for every experiment that needs it: mbarriers,
// TMA tile loads, warpgroup MMA (wgmma) from shared memory, named barriers between warpgroups,
// register reallocation.
// sm_90a only: a kernel that includes it declares nvcc_options=("-arch=sm_90a",).
//
// The shared-memory layout it assumes is the one TMA writes with 128-byte swizzling: rows of
// 64 halves (128 bytes), the 16-byte chunks of row r XOR-permuted by r % 8, so that the 8 rows
// of one 1024-byte "atom" hit all 32 banks. wgmma reads that layout directly, through a
// descriptor; nothing is copied to registers first.
#pragma once
#include <cuda.h>  // CUtensorMap
#include <stdint.h>

#include "tensor_core.cuh"  // smem_addr

// -- mbarriers: a 64-bit counter in shared memory that a phase completes when `count` arrivals
// have been made and every byte announced with expect_bytes has landed. Waits name the phase's
// parity (0, 1, 0, ...), since a barrier is reused round after round.
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
}

// Make initialised barriers visible to the TMA unit (the async proxy) before any load names them.
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::: "memory");
}

// --8<-- [start:fence]
// Shared memory that threads wrote (the generic proxy) is seen by the async proxy (a TMA store
// reading it, a wgmma) only after this fence, and only once the writers have synced with the
// thread that issues the copy or the product.
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// --8<-- [end:fence]

__device__ __forceinline__ void mbar_arrive(uint64_t* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Arrive, and announce `bytes` that TMA loads will deliver before the phase may complete.
__device__ __forceinline__ void mbar_expect_bytes(uint64_t* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity)
{
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    }
}

// -- Thread-block clusters: the blocks of a cluster run at once, on SMs of one GPC, and reach
// each other's shared memory. `p`'s address in block `rank` of the cluster (the same offset in
// its shared memory).
__device__ __forceinline__ unsigned cluster_addr(const void* p, unsigned rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
    return r;
}

// This block's rank in its cluster, 0 to the cluster's size - 1.
__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// Every thread of every block of the cluster meets here; a thread that diverged from its warp
// may come alone. What each wrote before is seen by all of them after.
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// Arrive on the mbarrier at `bar`'s offset in block `rank`, ordering this thread's earlier
// reads before it: "I am done with what you sent me", said to the block that sent it.
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, unsigned rank)
{
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_addr(bar, rank))
                 : "memory");
}

// -- TMA descriptors live in global memory, copied there from the host before the launch: the
// thread that issues loads makes them visible to the TMA unit (the tensormap proxy) first.
__device__ __forceinline__ void tma_descriptor_acquire(const CUtensorMap* map)
{
    asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;\n" ::"l"(map) : "memory");
}

// -- TMA: one box of a 2-D tensor (described on the host by cuTensorMapEncodeTiled) into shared
// memory, completing on `bar`. (x, y) is the box's first element: column, then row. Elements
// outside the tensor arrive as zeros, so ragged edges need no code here.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
                 ::"r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(x), "r"(y) : "memory");
}

// tma_load_2d into every block of the cluster that `blocks` names (bit r: rank r), at `dst`'s
// offset in each, completing on the barrier at `bar`'s offset in each: one read of L2, several
// copies.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      uint16_t blocks)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;\n"
                 ::"r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(x), "r"(y), "h"(blocks) : "memory");
}

// A tile of `rows` rows and Cols columns of 16-bit elements, its first at column x, row y, as
// Cols / 64 boxes of `rows` x 64 (a swizzled box row is at most 128 bytes), one after another
// in `dst`, all completing on `bar`, which is told of their bytes.
template <int Cols>
__device__ __forceinline__ void tma_load_tile(void* dst, const CUtensorMap* map, uint64_t* bar, int rows, int x, int y)
{
    mbar_expect_bytes(bar, rows * Cols * 2);
#pragma unroll
    for (int j = 0; j < Cols / 64; ++j) tma_load_2d(static_cast<char*>(dst) + j * rows * 128, map, bar, x + 64 * j, y);
}

// -- TMA stores: a box of shared memory, laid out as tma_load_2d would have written it, into
// the tensor at column x, row y; elements past the tensor's edges are left alone. The copy runs
// on after the call: commit the stores as a group, and write the box's shared memory again only
// once tma_store_wait_read has seen the group read. Threads' writes to the box must be fenced
// (fence_proxy_async) and synced with the issuing thread first.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"(map), "r"(smem_addr(src)), "r"(x), "r"(y) : "memory");
}

__device__ __forceinline__ void tma_store_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Until at most `Pending` committed groups of stores are still reading shared memory.
template <int Pending>
__device__ __forceinline__ void tma_store_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(Pending) : "memory");
}

// Until every committed group of stores has written global memory.
__device__ __forceinline__ void tma_store_wait_all()
{
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// A 128-byte-swizzled tile must start on a 1024-byte boundary: the dynamic shared memory from
// its first one (a launch asks for 1 KiB more than its tiles need).
template <typename T>
__device__ __forceinline__ T* align_1024(unsigned char* raw)
{
    return reinterpret_cast<T*>(raw + (1024 - smem_addr(raw) % 1024) % 1024);
}

// -- wgmma: a warpgroup (4 warps, 128 threads) multiplies a 64 x 16 tile of A by a 16 x N tile
// of B, both in shared memory, into fp32 accumulators spread over its registers (the layout of
// mma.sync's C fragment, repeated every 8 columns). Asynchronous: fence, issue, commit, wait.

// A descriptor of a 128-byte-swizzled tile: start address, then the byte strides wgmma needs
// (16-byte units). K-major A: `stride` steps 8 rows (one atom, 1024 bytes); `leading` is unused.
// N-major B: `leading` steps 64 columns (one 64-wide slab), `stride` steps 8 rows of K.
__device__ __forceinline__ uint64_t wgmma_desc(const void* tile, unsigned leading, unsigned stride)
{
    return (uint64_t)((smem_addr(tile) & 0x3FFFF) >> 4) | (uint64_t)(leading >> 4) << 16 |
           (uint64_t)(stride >> 4) << 32 | 1ull << 62;  // 1 << 62: 128-byte swizzle
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Wait until at most `Pending` committed groups are still running.
template <int Pending>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

// Keep the compiler from moving reads or writes of accumulators across a fence or a wait:
// wgmma writes them behind its back.
template <int R>
__device__ __forceinline__ void fence_registers(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Accumulator operands, written out as inline PTX needs them (it has no register lists):
// WGMMA_ACCn binds d[0] to d[n - 1] (the accumulators must be named d), and WGMMA_REGSn names
// them %0 to %(n - 1) in the instruction. Left defined for the headers that write the wgmma
// shapes of their own experiment (attention's).
#define WGMMA_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]),                                       \
                      "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WGMMA_ACC32   WGMMA_ACC8(0), WGMMA_ACC8(8), WGMMA_ACC8(16), WGMMA_ACC8(24)
#define WGMMA_ACC64   WGMMA_ACC32, WGMMA_ACC8(32), WGMMA_ACC8(40), WGMMA_ACC8(48), WGMMA_ACC8(56)
#define WGMMA_ACC128  WGMMA_ACC64, WGMMA_ACC8(64), WGMMA_ACC8(72), WGMMA_ACC8(80), WGMMA_ACC8(88),                      \
                      WGMMA_ACC8(96), WGMMA_ACC8(104), WGMMA_ACC8(112), WGMMA_ACC8(120)
#define WGMMA_REGS32  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                          \
                      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_REGS64  WGMMA_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
                      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_REGS128 WGMMA_REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
                      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                \
                      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "    \
                      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

// GEMM: d += A B with fp16 inputs and fp32 accumulators; A is K-major (rows of K), B is N-major
// (rows of N, the "transposed" operand: the last immediate).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WGMMA_REGS64 "}, %64, %65, 1, 1, 1, 0, 1;\n"
                 : WGMMA_ACC64 : "l"(desc_a), "l"(desc_b));
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" WGMMA_REGS128 "}, %128, %129, 1, 1, 1, 0, 1;\n"
                 : WGMMA_ACC128 : "l"(desc_a), "l"(desc_b));
}

// -- Named barriers (0 is __syncthreads): `threads` of the block, a multiple of 32, meet at `id`.
// sync waits for all of them; arrive counts this warp in and goes on. Warpgroups that take turns
// order themselves with these, leaving the others to run.
__device__ __forceinline__ void barrier_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void barrier_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// -- Register reallocation between the warpgroups of a block: a producer that only issues TMA
// hands registers back, so consumers holding 64 x 256 accumulators can have more.
template <int Registers>
__device__ __forceinline__ void registers_shrink()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

template <int Registers>
__device__ __forceinline__ void registers_grow()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
