// Device building blocks of the warp-level tensor-core GEMMs (mma.sync, sm_80 and newer) that the
// suites share: conv's im2col GEMM (conv/cuda/im2col_gemm_mma.cu) and the op suite's matmul
// (ops/cuda/matmul.cu). Their index math, checked on the CPU, is core/cuda/mma_index.hpp.
//   - PTX wrappers: ldmatrix (and .trans), mma.sync for fp16/bf16 (m16n8k16) and tf32 (m16n8k8),
//     cp.async with zero fill, cvt.rna.tf32;
//   - 16-byte operand vectors: loads, element-wise assembly at unaligned edges, tf32 rounding;
//   - the warp's compute loop over one 64-byte k slice of a shared stage (A rows k-contiguous at
//     kMmaRowStride; B either with rows n, k contiguous, or with rows k, n contiguous);
//   - loaders of a k-contiguous row tile (A) and of a tile with rows k, n contiguous (B as a
//     row-major matrix), by cp.async or through registers;
//   - the epilogue's staging of accumulators into a shared tile, and the split-K sum.
// Every piece is inline device code (no kernels here): each .cu wraps them in kernels of its own.
//
// Why mma.sync PTX rather than nvcuda::wmma: wmma's fragment layout is opaque; mma.sync's is
// documented (core/cuda/mma_index.hpp encodes it, a CPU test checks it), which lets one ldmatrix
// scheme feed fp16, bf16 and tf32 from the same padded tiles and the epilogue stage the
// accumulators itself.
// What limits mma.sync on Hopper (sm_90): it is Ampere's warp-synchronous MMA. Each warp feeds
// its operands through registers (ldmatrix, then mma), so every k step costs register-file
// traffic and issue slots for loads, MMAs and address math, and the tensor cores reach about two
// thirds of wgmma's rate at best (published Hopper microbenchmarks); wgmma (sm_90a only) reads A
// and B straight from shared memory for a 4-warp group, asynchronously, fed by TMA bulk copies
// and mbarriers. So kernels built from these pieces stay well below cuBLAS's Hopper kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma_index.hpp"

// The wrappers are compiled for every architecture of the build, but their bodies exist only for
// sm_80 and newer; BENCH_MMA_OK guards them (a kernel built for older code should __trap()).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define BENCH_MMA_OK 1
#else
#define BENCH_MMA_OK 0
#endif

namespace bench {

template <MmaDtype T>
struct MmaTraits {
  static constexpr int kBytes = mma_dtype_bytes(T);        // storage bytes per value
  static constexpr int kVec = kMmaVecBytes / kBytes;       // values per 16-byte vector
  static constexpr int kSliceK = kMmaSliceBytes / kBytes;  // k values per slice (BK)
  static constexpr int kStepK = kMmaStepBytes / kBytes;    // k values per mma step
};

// ---- PTX wrappers -------------------------------------------------------------------------------

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 matrices of 16-bit values (or 8x4 of 32-bit ones) from shared memory.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address) {
#if BENCH_MMA_OK
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  (void)address;
  r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

// The same, each 8x8 matrix of 16-bit values transposed on the way.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned address) {
#if BENCH_MMA_OK
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  (void)address;
  r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

// One 32-bit word from shared memory (volatile: never moved across a barrier).
__device__ __forceinline__ unsigned ld_shared_u32(unsigned address) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(address));
  return r;
}

// d += a * b for one 16x8 output tile: one k16 step (fp16, bf16) or one k8 step (tf32).
template <MmaDtype T>
__device__ __forceinline__ void mma_step(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
#if BENCH_MMA_OK
  if constexpr (T == MmaDtype::fp16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (T == MmaDtype::bf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

// fp32 bits rounded to tf32 (round to nearest, ties away from zero), low 13 bits cleared.
__device__ __forceinline__ unsigned round_to_tf32(unsigned bits) {
#if BENCH_MMA_OK
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
  return r;
#else
  return bits;
#endif
}

// 16 bytes global -> shared without registers; src_bytes 0 writes zeros (padding, edges) and reads
// nothing (src must still be a valid address: callers pass the tensor's base).
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, int src_bytes) {
#if BENCH_MMA_OK
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
#else
  (void)dst;
  (void)src;
  (void)src_bytes;
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if BENCH_MMA_OK
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if BENCH_MMA_OK
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// ---- Operand vectors ----------------------------------------------------------------------------

__device__ __forceinline__ uint4 load_vector(const unsigned char* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

template <int kBytes>
__device__ __forceinline__ unsigned load_value(const unsigned char* p) {
  if constexpr (kBytes == 2)
    return __ldg(reinterpret_cast<const unsigned short*>(p));
  else
    return __ldg(reinterpret_cast<const unsigned*>(p));
}

// Places value e (its storage bits) of a vector: two 16-bit values per word, or one 32-bit one.
template <int kBytes>
__device__ __forceinline__ void set_value(unsigned (&w)[4], int e, unsigned bits) {
  if constexpr (kBytes == 2)
    w[e >> 1] |= bits << ((e & 1) * 16);
  else
    w[e] = bits;
}

// Stores one operand vector to shared memory, rounding tf32 operands there (once per value).
template <MmaDtype T>
__device__ __forceinline__ void store_operand(unsigned char* p, uint4 v) {
  if constexpr (T == MmaDtype::tf32) {
    v.x = round_to_tf32(v.x);
    v.y = round_to_tf32(v.y);
    v.z = round_to_tf32(v.z);
    v.w = round_to_tf32(v.w);
  }
  *reinterpret_cast<uint4*>(p) = v;
}

// Rounds, in place, a tf32 operand vector this thread copied into a stage (once per value).
__device__ __forceinline__ void round_stage_vector_to_tf32(unsigned char* p) {
  uint4 v = *reinterpret_cast<const uint4*>(p);
  v.x = round_to_tf32(v.x);
  v.y = round_to_tf32(v.y);
  v.z = round_to_tf32(v.z);
  v.w = round_to_tf32(v.w);
  *reinterpret_cast<uint4*>(p) = v;
}

// FP32 accumulator -> storage bits of the output type (tf32: fp32 storage, unchanged).
template <MmaDtype T>
__device__ __forceinline__ unsigned output_bits(float x) {
  if constexpr (T == MmaDtype::fp16)
    return __half_as_ushort(__float2half_rn(x));
  else if constexpr (T == MmaDtype::bf16)
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  else
    return __float_as_uint(x);
}

// ---- Warp tiles ---------------------------------------------------------------------------------

// A BM x BN block tile computed by warps of WM x WN outputs, each MI x NI mma tiles of 16x8.
template <int BM_, int BN_, int WM_, int WN_>
struct MmaWarpTiling {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_;
  static constexpr MmaTileDims kDims{BM, BN, WM, WN};
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int MI = WM / 16, NI = WN / 8;  // mma tiles per warp
  static_assert(NI % 2 == 0, "B fragments are loaded two n8 tiles at a time");
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0, "warp tiling");
};

template <int MI, int NI>
__device__ __forceinline__ void zero_accumulators(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
}

// A fragments of MI 16-row tiles, k contiguous at kMmaRowStride: `address` is the lane's
// ldmatrix_a_row in the first tile at this k step.
template <int MI>
__device__ __forceinline__ void load_a_fragments(unsigned (&a)[MI][4], unsigned address) {
#pragma unroll
  for (int i = 0; i < MI; ++i) ldmatrix_x4(a[i], address + i * 16 * kMmaRowStride);
}

// Where B's fragments come from, and how far a k step moves in a stage:
//   MmaBRowsN<kStride>: rows n, k contiguous (conv's column tile); the lane's address is its
//     ldmatrix_b_row; a k step is 32 bytes along the rows.
//   MmaBRowsK<kStride, T>: rows k, n contiguous (row-major B[k][n]); 16-bit values by
//     ldmatrix.trans from the lane's ldmatrix_trans_b_row; tf32 values by 4-byte loads of the
//     lane's (k = tig, n = group) and k + 4 (mma_m16n8k8_tf32_b); a k step is 16 or 8 rows.
// The lane's address points into the warp's first n8 tile at the slice's first k step.
template <int kStride>
struct MmaBRowsN {
  static constexpr int kStepBytes = kMmaStepBytes;
  template <int NI>
  __device__ __forceinline__ static void load(unsigned (&b)[NI][2], unsigned address) {
#pragma unroll
    for (int j = 0; j < NI / 2; ++j) {
      unsigned r[4];
      ldmatrix_x4(r, address + j * 16 * kStride);
      b[2 * j][0] = r[0];
      b[2 * j][1] = r[1];
      b[2 * j + 1][0] = r[2];
      b[2 * j + 1][1] = r[3];
    }
  }
  __device__ __forceinline__ static unsigned lane_offset(int lane) {
    const LdmatrixRow r = ldmatrix_b_row(lane);
    return unsigned(r.row * kStride + r.chunk * kMmaVecBytes);
  }
};
template <int kStride, MmaDtype T>
struct MmaBRowsK {
  static constexpr int kBytes = mma_dtype_bytes(T);
  static constexpr int kStepBytes = MmaTraits<T>::kStepK * kStride;
  template <int NI>
  __device__ __forceinline__ static void load(unsigned (&b)[NI][2], unsigned address) {
    if constexpr (kBytes == 2) {
#pragma unroll
      for (int j = 0; j < NI / 2; ++j) {
        unsigned r[4];
        ldmatrix_x4_trans(r, address + j * 16 * kBytes);
        b[2 * j][0] = r[0];
        b[2 * j][1] = r[1];
        b[2 * j + 1][0] = r[2];
        b[2 * j + 1][1] = r[3];
      }
    } else {
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        b[j][0] = ld_shared_u32(address + j * 8 * kBytes);
        b[j][1] = ld_shared_u32(address + j * 8 * kBytes + 4 * kStride);
      }
    }
  }
  __device__ __forceinline__ static unsigned lane_offset(int lane) {
    if constexpr (kBytes == 2) {
      const LdmatrixRow r = ldmatrix_trans_b_row(lane);
      return unsigned(r.row * kStride + r.chunk * kMmaVecBytes);
    } else {
      const MmaCoord c = mma_m16n8k8_tf32_b(lane, 0);
      return unsigned(c.row * kStride + c.col * kBytes);
    }
  }
};

// The A and B fragments of one k step of a warp: `a` is the lane's A address in the stage (its
// ldmatrix_a_row within the warp's first row tile), `b` its B address (BFrag::lane_offset within
// the warp's first column tile), at the slice's first step.
template <int MI, int NI>
struct MmaFragments {
  unsigned a[MI][4], b[NI][2];
};
template <int MI, int NI, class BFrag>
__device__ __forceinline__ void load_fragments(MmaFragments<MI, NI>& f, unsigned a, unsigned b,
                                               int step) {
  load_a_fragments<MI>(f.a, a + step * kMmaStepBytes);
  BFrag::template load<NI>(f.b, b + step * BFrag::kStepBytes);
}
template <int MI, int NI, MmaDtype T>
__device__ __forceinline__ void mma_fragments(float (&acc)[MI][NI][4],
                                              const MmaFragments<MI, NI>& f) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) mma_step<T>(acc[i][j], f.a[i], f.b[j]);
}
constexpr int kMmaStepsPerSlice = kMmaSliceBytes / kMmaStepBytes;

// acc += the warp's part of one 64-byte k slice, each step's fragments loaded, then multiplied.
template <int MI, int NI, MmaDtype T, class BFrag>
__device__ __forceinline__ void mma_warp_slice(float (&acc)[MI][NI][4], unsigned a, unsigned b) {
#pragma unroll
  for (int step = 0; step < kMmaStepsPerSlice; ++step) {
    MmaFragments<MI, NI> f;
    load_fragments<MI, NI, BFrag>(f, a, b, step);
    mma_fragments<MI, NI, T>(acc, f);
  }
}

// ---- Loaders of a k-contiguous row tile (A) -----------------------------------------------------

// The k slice [k0, k0 + BK) of rows row0 .. row0 + kRows - 1 of a row-major rows x cols matrix
// (k = the column), into a stage at kMmaRowStride: kRows x 4 vectors dealt to kThreads threads by
// mma_a_slot, zero-filled past the matrix's edges.
template <int kRows, int kThreads>
struct MmaRowSliceDeal {
  static constexpr int kVecs = kRows * kMmaVecsPerRow;
  static constexpr int kPerThread = (kVecs + kThreads - 1) / kThreads;
  // Whether the thread's j-th vector exists (false only where the vectors do not split evenly).
  __device__ __forceinline__ static bool has(int tid, int j) {
    return kVecs % kThreads == 0 || tid + j * kThreads < kVecs;
  }
};

// By cp.async (16-byte vectors): needs cols % vector == 0 and a 16-byte aligned base (rows start
// aligned). round_tf32 rounds the thread's landed vectors in place.
template <int kRows, int kThreads, MmaDtype T>
struct MmaRowSliceCopier {
  using Deal = MmaRowSliceDeal<kRows, kThreads>;
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  const unsigned char* base;  // row 0 of the matrix
  int rows, cols, row0, tid;

  __device__ MmaRowSliceCopier(const void* base_, int rows_, int cols_, int row0_, int tid_)
      : base(static_cast<const unsigned char*>(base_)),
        rows(rows_),
        cols(cols_),
        row0(row0_),
        tid(tid_) {}

  __device__ __forceinline__ void copy(int k0, unsigned stage) const {
#pragma unroll
    for (int j = 0; j < Deal::kPerThread; ++j) {
      if (!Deal::has(tid, j)) break;
      const MmaVecSlot s = mma_a_slot(tid + j * kThreads);
      const int row = row0 + s.mrow, k = k0 + s.kv * kVec;
      const bool ok = row < rows && k < cols;
      cp_async_16(stage + s.mrow * kMmaRowStride + s.kv * kMmaVecBytes,
                  ok ? base + (std::int64_t(row) * cols + k) * kBytes : base, ok ? 16 : 0);
    }
  }
  __device__ __forceinline__ void round_tf32(unsigned char* stage) const {
#pragma unroll
    for (int j = 0; j < Deal::kPerThread; ++j) {
      if (!Deal::has(tid, j)) break;
      const MmaVecSlot s = mma_a_slot(tid + j * kThreads);
      round_stage_vector_to_tf32(stage + s.mrow * kMmaRowStride + s.kv * kMmaVecBytes);
    }
  }
};

// Through registers, any alignment: load() the slice into registers (16-byte loads where cols %
// vector == 0, else assembled from element loads), store() it to a stage (tf32 rounded there).
template <int kRows, int kThreads, MmaDtype T>
struct MmaRowSliceLoader {
  using Deal = MmaRowSliceDeal<kRows, kThreads>;
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  const unsigned char* base;  // row 0 of the matrix
  int rows, cols, row0, tid;
  bool vector_ok;  // cols % kVec == 0: rows start 16-byte aligned
  uint4 v[Deal::kPerThread];

  __device__ MmaRowSliceLoader(const void* base_, int rows_, int cols_, int row0_, int tid_)
      : base(static_cast<const unsigned char*>(base_)),
        rows(rows_),
        cols(cols_),
        row0(row0_),
        tid(tid_),
        vector_ok(cols_ % kVec == 0) {}

  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int j = 0; j < Deal::kPerThread; ++j) {
      if (!Deal::has(tid, j)) break;
      const MmaVecSlot s = mma_a_slot(tid + j * kThreads);
      const int row = row0 + s.mrow, k = k0 + s.kv * kVec;
      const unsigned char* p = base + (std::int64_t(row) * cols + k) * kBytes;
      const bool row_ok = row < rows;
      if (row_ok && vector_ok && k < cols) {
        v[j] = load_vector(p);
      } else {
        unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (row_ok && k + e < cols) set_value<kBytes>(w, e, load_value<kBytes>(p + e * kBytes));
        v[j] = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
  __device__ __forceinline__ void store(unsigned char* stage) const {
#pragma unroll
    for (int j = 0; j < Deal::kPerThread; ++j) {
      if (!Deal::has(tid, j)) break;
      const MmaVecSlot s = mma_a_slot(tid + j * kThreads);
      store_operand<T>(stage + s.mrow * kMmaRowStride + s.kv * kMmaVecBytes, v[j]);
    }
  }
};

// The same behind one interface: copy(k0, stage) by cp.async (kAsync; round_tf32 after it lands),
// or through registers, loaded and stored at once (tf32 rounded at the store).
template <int kRows, int kThreads, MmaDtype T, bool kAsync>
struct MmaRowSlice {
  std::conditional_t<kAsync, MmaRowSliceCopier<kRows, kThreads, T>,
                     MmaRowSliceLoader<kRows, kThreads, T>>
      rows;

  __device__ MmaRowSlice(const void* base, int rows_, int cols, int row0, int tid)
      : rows(base, rows_, cols, row0, tid) {}
  __device__ __forceinline__ void copy(int k0, unsigned char* stage) {
    if constexpr (kAsync) {
      rows.copy(k0, shared_address(stage));
    } else {
      rows.load(k0);
      rows.store(stage);
    }
  }
  __device__ __forceinline__ void round_tf32(unsigned char* stage) const { rows.round_tf32(stage); }
};

// ---- Loader of a row tile with n contiguous (B as a row-major k x n matrix) ---------------------

// Rows k0 .. k0 + kRows - 1 (a k slice) of a row-major rows x cols matrix, columns col0 .. col0 +
// kCols - 1, into a stage at byte kOffset, rows mma_k_rows_stride apart, as 16-byte vectors dealt
// to kThreads threads (a warp copies whole row runs). kAsync: cp.async, zero-filled past the
// edges (needs cols % vector == 0 and an aligned base); else through registers, element by
// element where needed, tf32 rounded at the store.
template <int kRows, int kCols, int kThreads, MmaDtype T, bool kAsync, int kOffset>
struct MmaKRowsSlice {
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  static constexpr int kStride = mma_k_rows_stride(kCols, kBytes), kVecsPerRow = kCols / kVec;
  static constexpr int kPer = kRows * kVecsPerRow / kThreads;
  static_assert(kRows * kVecsPerRow % kThreads == 0, "the slice must split evenly");
  const unsigned char* base;  // row 0 of the matrix
  int rows, cols, col0, tid;

  __device__ __forceinline__ static int slot(int id) {
    return kOffset + id / kVecsPerRow * kStride + id % kVecsPerRow * kMmaVecBytes;
  }
  __device__ __forceinline__ void copy(int k0, unsigned char* stage) const {
    uint4 v[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int id = tid + j * kThreads;
      const int row = k0 + id / kVecsPerRow, col = col0 + id % kVecsPerRow * kVec;
      const unsigned char* src = base + (std::int64_t(row) * cols + col) * kBytes;
      if constexpr (kAsync) {
        const bool ok = row < rows && col < cols;
        cp_async_16(shared_address(stage + slot(id)), ok ? src : base, ok ? 16 : 0);
      } else if (row < rows && col + kVec <= cols && cols % kVec == 0) {
        v[j] = load_vector(src);
      } else {
        unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (row < rows && col + e < cols)
            set_value<kBytes>(w, e, load_value<kBytes>(src + e * kBytes));
        v[j] = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    if constexpr (!kAsync) {  // all loads in flight first, then the stores
#pragma unroll
      for (int j = 0; j < kPer; ++j) store_operand<T>(stage + slot(tid + j * kThreads), v[j]);
    }
  }
  __device__ __forceinline__ void round_tf32(unsigned char* stage) const {
#pragma unroll
    for (int j = 0; j < kPer; ++j) round_stage_vector_to_tf32(stage + slot(tid + j * kThreads));
  }
};

// ---- Epilogue -----------------------------------------------------------------------------------

// Writes the warp's accumulators, converted to T's storage, into a shared tile: output (r, c) of
// the block (r along A's rows, c along B's columns; the warp's first at row0, col0) at element
// r * stride + c, or c * stride + r when kTransposed. A lane holds the column pairs (c, c + 1).
template <int MI, int NI, MmaDtype T, bool kTransposed>
__device__ __forceinline__ void stage_accumulators(const float (&acc)[MI][NI][4],
                                                   unsigned char* smem, int stride, int row0,
                                                   int col0, int lane) {
  constexpr int kBytes = mma_dtype_bytes(T);
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const MmaCoord c = mma_m16n8_c(lane, 2 * h);  // elements 2h and 2h+1: columns c.col, +1
        const int r = row0 + i * 16 + c.row;
        const int col = col0 + j * 8 + c.col;
        const unsigned x0 = output_bits<T>(acc[i][j][2 * h]);
        const unsigned x1 = output_bits<T>(acc[i][j][2 * h + 1]);
        if constexpr (!kTransposed) {
          unsigned char* p = smem + (r * stride + col) * kBytes;
          if constexpr (kBytes == 2)
            *reinterpret_cast<unsigned*>(p) = x0 | (x1 << 16);
          else
            *reinterpret_cast<uint2*>(p) = make_uint2(x0, x1);
        } else if constexpr (kBytes == 2) {
          *reinterpret_cast<unsigned short*>(smem + (col * stride + r) * kBytes) =
              static_cast<unsigned short>(x0);
          *reinterpret_cast<unsigned short*>(smem + ((col + 1) * stride + r) * kBytes) =
              static_cast<unsigned short>(x1);
        } else {
          *reinterpret_cast<unsigned*>(smem + (col * stride + r) * kBytes) = x0;
          *reinterpret_cast<unsigned*>(smem + ((col + 1) * stride + r) * kBytes) = x1;
        }
      }
}

// Split-K's second pass, the outputs 4q .. 4q + 3 of `elements`: the FP32 partials of the splits
// (split s at partial + s * elements) summed in split order (deterministic), converted to T's
// storage at dst (16-byte partial loads where elements % 4 == 0). Callers run it over every q.
template <MmaDtype T>
__device__ __forceinline__ void split_reduce_quad(const float* __restrict__ partial, int splits,
                                                  std::int64_t elements, unsigned char* dst,
                                                  std::int64_t q) {
  constexpr int kBytes = mma_dtype_bytes(T);
  const std::int64_t i = 4 * q;
  if (elements % 4 == 0) {
    float4 sum = __ldg(reinterpret_cast<const float4*>(partial + i));
    for (int s = 1; s < splits; ++s) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(partial + s * elements + i));
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    if constexpr (kBytes == 4) {
      *reinterpret_cast<float4*>(dst + i * 4) = sum;
    } else {
      *reinterpret_cast<uint2*>(dst + i * 2) =
          make_uint2(output_bits<T>(sum.x) | (output_bits<T>(sum.y) << 16),
                     output_bits<T>(sum.z) | (output_bits<T>(sum.w) << 16));
    }
  } else {
    for (std::int64_t e = i; e < i + 4 && e < elements; ++e) {
      float sum = partial[e];
      for (int s = 1; s < splits; ++s) sum += partial[s * elements + e];
      if constexpr (kBytes == 4)
        reinterpret_cast<float*>(dst)[e] = sum;
      else
        reinterpret_cast<unsigned short*>(dst)[e] =
            static_cast<unsigned short>(output_bits<T>(sum));
    }
  }
}

// ---- Host side ----------------------------------------------------------------------------------

// Above 48 KiB of dynamic shared memory a kernel must opt in. Callers keep the answer in a static
// of their own instantiation, so that it happens once per kernel and process (a failure throws
// and is retried at the next launch).
template <class Kernel>
bool allow_shared_bytes(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return true;
}

}  // namespace bench
