// What rung 6 adds to hopper.cuh's machinery (mbarriers, TMA, wgmma descriptors and waits):
// the two wgmma shapes attention multiplies by, and the barriers that order its warpgroups.
// (Kept beside the experiment: an edit of hopper.cuh re-keys the matmul and softmax results.)
#pragma once
#include "flash.cuh"  // pack, and attention.cuh's types
#include "hopper.cuh"

// The 128-byte-swizzled tiles must start on a 1024-byte boundary: the dynamic shared memory
// from its first one (the launch asks for 1 KiB more than the tiles need).
template <typename T>
__device__ __forceinline__ T* align_1024(unsigned char* raw)
{
    return reinterpret_cast<T*>(raw + (1024 - smem_addr(raw) % 1024) % 1024);
}

// Named barriers (0 is __syncthreads): `threads` of the block, a multiple of 32, meet at `id`.
// sync waits for all of them; arrive counts this warp in and goes on.
__device__ __forceinline__ void barrier_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void barrier_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Accumulator operands, written out as inline PTX needs them (it has no register lists).
#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC32 ACC8(0), ACC8(8), ACC8(16), ACC8(24)
#define ACC64 ACC32, ACC8(32), ACC8(40), ACC8(48), ACC8(56)
#define REGS32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define REGS64 REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

// S = Q K^T (or S += Q K^T, with `accumulate`) for 64 queries and 128 keys, 16 of D: both
// operands from shared memory and K-major (K's rows hold D contiguous, and D is what the
// product sums over), so B is not transposed (the last immediate, 0).
#define WGMMA_QK(TYPE, PTX)                                                                         \
    __device__ __forceinline__ void wgmma_qk(float (&d)[64], uint64_t desc_q, uint64_t desc_k, bool accumulate, TYPE) \
    {                                                                                              \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                   \
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX "." PTX " {" REGS64 "}, "  \
                     "%64, %65, p, 1, 1, 0, 0;\n}\n"                                              \
                     : ACC64 : "l"(desc_q), "l"(desc_k), "r"(int(accumulate)));                     \
    }
WGMMA_QK(__half, "f16")
WGMMA_QK(__nv_bfloat16, "bf16")

// O += P V for 64 queries, 16 keys and all D columns: P from registers (the A fragment of
// mma.sync's m16n8k16, one warp's 16 rows each), V from shared memory with D contiguous
// (N-major), so transposed on the way in (the last immediate, 1).
#define WGMMA_PV(N, TYPE, PTX, ACC, REGS, A)                                                        \
    __device__ __forceinline__ void wgmma_pv(float (&d)[N / 2], const unsigned (&p)[4], uint64_t desc_v, TYPE) \
    {                                                                                              \
        asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " {" REGS "}, " \
                     A ", 1, 1, 1, 1;\n"                                                           \
                     : ACC : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(desc_v));             \
    }
WGMMA_PV(128, __half, "f16", ACC64, REGS64, "{%64, %65, %66, %67}, %68")
WGMMA_PV(128, __nv_bfloat16, "bf16", ACC64, REGS64, "{%64, %65, %66, %67}, %68")
WGMMA_PV(64, __half, "f16", ACC32, REGS32, "{%32, %33, %34, %35}, %36")
WGMMA_PV(64, __nv_bfloat16, "bf16", ACC32, REGS32, "{%32, %33, %34, %35}, %36")
#undef WGMMA_QK
#undef WGMMA_PV
#undef ACC8
#undef ACC32
#undef ACC64
#undef REGS32
#undef REGS64
