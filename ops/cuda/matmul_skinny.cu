// Variant 10 of the op suite's matmul (ops/cuda/matmul_skinny.hpp): C[b] = A[b] B[b] for m <= 16,
// fp16 and bf16, FP32 accumulation. At such m the GEMM is a stream of B (k x n) read once; the
// kernel is built to keep HBM busy, not the tensor cores.
//
// Build: part of ops_cuda; the cluster reduction needs sm_90 (other architectures __trap(), and
// skinny_runs refuses devices without clusters). Registers and spills (CUDA 13.0, sm_90: 128 for
// one 8-row group under __launch_bounds__(256, 2), 216 for two, no spills):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c ops/cuda/matmul_skinny.cu -o /dev/null
// Run (on a GPU), beside cuBLASLt:
//   build/experiments/myops --backend own_cuda,cublaslt --timing pure
//     --problem matmul:m8n4096k4096:bf16 --variant 10
//
// Algorithm. The product is computed transposed, C^T = B^T A^T, so that n fills mma.sync's 16
// rows and m its 8 columns (m16n8k16; a second 8-column group for 8 < m <= 16): no row of the
// MMA is padding at m = 8. Each lane loads 16-byte vectors of B's rows (8 consecutive n) and
// pairs two k rows' values with byte permutes into the MMA's A fragment; vector element e feeds
// MMA e, so the 8 MMAs of a k step cover 128 columns of B with the n of MMA e at 8 * row + e.
// A's slice of the block (its k range, rows past m and k past the range zero) is copied to shared
// memory once and read as the B fragment (k pairs of a row are adjacent in memory: one 32-bit
// load each, conflict-free at a row stride of kc + 8 values).
//
// Schedule. A block of 8 warps owns 128 columns and kc values of k; warp w takes the k steps of
// 16 in pairs 2w + 16i, {0, 1}: 16 vectors of 16 bytes in flight per lane (8 KiB per warp) before
// its 16 MMAs. B is read with ld.global.nc.L1::no_allocate (read once; A stays in L1/L2); each
// warp's first pair is asked of L2 (prefetch.global.L2) before A's copy, so that the copy does not
// delay the stream. The warps' partial sums meet in shared memory in a fixed tree (4+4, 2+2, 1+1),
// into an FP32 tile. K is split over the blocks of a thread block cluster (1 to 8, along grid x):
// each block's tile stays in its shared memory, and after a cluster barrier block r sums its share
// of the column block's elements (256 in every 256 x splits) over the cluster's blocks in rank
// order (distributed shared memory) and writes them in the dtype: deterministic, no workspace, no
// second kernel. The splits fill the GPU: floor(resident blocks / (column blocks x batches)), at
// most 8, each block at least 16 steps where k allows. Grid z is the batch (blocks loop beyond
// 65535).
#include "ops/cuda/matmul_skinny.hpp"

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma.cuh"
#include "ops/cuda/launch.cuh"

namespace ops::cuda {
namespace {

using bench::MmaDtype;

// [[maybe_unused]]: the kernel body is compiled for sm_90 only (below sm_90 it traps), so builds
// for older architectures would warn that the pieces only it uses are unused.
constexpr int kThreads = 256, kCols = 128, kStepK = 16, kMaxSplits = 8;
[[maybe_unused]] constexpr int kWarps = 8;
constexpr int kMaxShared = 96 * 1024;   // A's slice at most (opted in above 48 KiB)
constexpr int kTileStride = kCols + 1;  // the FP32 output tile's row stride (floats)

struct SkinnyArgs {
  std::int64_t batches;
  int m, n, k, kc;
};

// 16-byte vectors of B: read once, so not kept in L1.
[[maybe_unused]] __device__ __forceinline__ uint4 load_stream(const unsigned char* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// Eight values of B at p (column col of a row; zero past n, or for a row outside the block's k
// range): one vector where rows are whole vectors (kVec: n % 8 == 0), else value by value.
template <bool kVec>
__device__ __forceinline__ uint4 load_b8(const unsigned char* p, bool row_ok, int col, int n) {
  if (!row_ok || col >= n) return make_uint4(0, 0, 0, 0);
  if constexpr (kVec) {
    return load_stream(p);
  } else {
    const auto* s = reinterpret_cast<const unsigned short*>(p);
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (col + e < n) w[e / 2] |= unsigned(__ldg(s + e)) << (16 * (e % 2));
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
}

__device__ __forceinline__ unsigned word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Value e of x in the low half, value e of y in the high half: one k pair of the A fragment.
[[maybe_unused]] __device__ __forceinline__ unsigned pair(const uint4& x, const uint4& y, int e) {
  return __byte_perm(word(x, e / 2), word(y, e / 2), e % 2 ? 0x7632 : 0x5410);
}

// A's rows 0..8G-1 at k [k0, k0 + kc) into shared memory (row stride kc + 8 values), zero past m
// and past k.
template <int G>
__device__ __forceinline__ void load_a(const unsigned char* a, unsigned char* as,
                                       const SkinnyArgs& g, int k0) {
  const int stride = g.kc + 8, klen = min(g.kc, g.k - k0);
  if (g.k % 8 == 0) {  // whole vectors: k0 and klen are multiples of 8
    const int per_row = g.kc / 8;
    for (int id = threadIdx.x; id < 8 * G * per_row; id += kThreads) {
      const int r = id / per_row, kk = id % per_row * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < g.m && kk < klen)
        v = __ldg(reinterpret_cast<const uint4*>(a + (std::int64_t(r) * g.k + k0 + kk) * 2));
      *reinterpret_cast<uint4*>(as + (r * stride + kk) * 2) = v;
    }
  } else {
    const auto* s = reinterpret_cast<const unsigned short*>(a);
    auto* d = reinterpret_cast<unsigned short*>(as);
    for (int id = threadIdx.x; id < 8 * G * g.kc; id += kThreads) {
      const int r = id / g.kc, kk = id % g.kc;
      d[r * stride + kk] =
          r < g.m && kk < klen ? __ldg(s + std::int64_t(r) * g.k + k0 + kk) : (unsigned short)0;
    }
  }
}

template <MmaDtype T>
__device__ __forceinline__ unsigned short to_storage(float x) {
  return static_cast<unsigned short>(bench::output_bits<T>(x));
}

// What a lane's k loop needs: B's row pitch in bytes, the rows left in the block's k range from
// the lane's first row, its first column, n, the block's k steps, and A's 8-row group pitch in
// shared memory (bytes).
struct StreamArgs {
  std::int64_t row_bytes;
  int rows_left, col, n, steps, group_bytes;
};

// Two k steps' vectors of B for this lane (steps s0 and s0 + 1: rows 2tq, 2tq + 1, 2tq + 8,
// 2tq + 9 of each, columns 8gq and 64 + 8gq); zero past the block's k range, without a load.
template <bool kVec>
__device__ __forceinline__ void load_pair(uint4 (&v)[2][4][2], const unsigned char* bl,
                                          const StreamArgs& sa, int s0) {
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int kr = 0; kr < 4; ++kr) {
      const int dk = (s0 + j) * kStepK + (kr & 1) + (kr >> 1) * 8;
      const unsigned char* p = bl + dk * sa.row_bytes;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        v[j][kr][h] = load_b8<kVec>(p + h * 128, dk < sa.rows_left, sa.col + h * 64, sa.n);
    }
}

// The same vectors only asked of L2 (prefetch.global.L2), holding no registers.
[[maybe_unused]] __device__ __forceinline__ void prefetch_pair(const unsigned char* bl,
                                                               const StreamArgs& sa, int s0) {
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int kr = 0; kr < 4; ++kr) {
      const int dk = (s0 + j) * kStepK + (kr & 1) + (kr >> 1) * 8;
      const unsigned char* p = bl + dk * sa.row_bytes;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (dk < sa.rows_left && sa.col + h * 64 < sa.n)
          asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p + h * 128));
    }
}

// The warp's k steps of the block (pairs 2w + 16i, {0, 1}) into acc: B's values from bl (this
// lane's first vector), A's from al (this lane's first k pair in shared memory).
template <MmaDtype T, int G, bool kVec>
__device__ __forceinline__ void stream_b(float (&acc)[G][8][4], const unsigned char* bl,
                                         const unsigned char* al, const StreamArgs& sa, int warp) {
  uint4 v[2][4][2];
  for (int s0 = 2 * warp; s0 < sa.steps; s0 += 2 * kWarps) {
    load_pair<kVec>(v, bl, sa, s0);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (s0 + j >= sa.steps) break;
      const unsigned char* ap = al + (s0 + j) * kStepK * 2;
      unsigned bf[G][2];
#pragma unroll
      for (int q = 0; q < G; ++q) {
        bf[q][0] = *reinterpret_cast<const unsigned*>(ap + q * sa.group_bytes);
        bf[q][1] = *reinterpret_cast<const unsigned*>(ap + q * sa.group_bytes + 16);
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const unsigned af[4] = {pair(v[j][0][0], v[j][1][0], e), pair(v[j][0][1], v[j][1][1], e),
                                pair(v[j][2][0], v[j][3][0], e), pair(v[j][2][1], v[j][3][1], e)};
#pragma unroll
        for (int q = 0; q < G; ++q) bench::mma_step<T>(acc[q][e], af, bf[q]);
      }
    }
  }
}

// G: 8-row groups of m (1 or 2). Grid: x = column blocks x splits (a cluster of `splits` along x),
// y unused, z = batches (looping beyond 65535).
template <MmaDtype T, int G>
__global__ void __launch_bounds__(kThreads, G == 1 ? 2 : 1)
    skinny_kernel(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                  unsigned char* __restrict__ c, const SkinnyArgs g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  extern __shared__ __align__(16) unsigned char smem[];
  const int splits = int(cluster.num_blocks()), split = int(cluster.block_rank());
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int col0 = int(blockIdx.x) / splits * kCols;
  const int k0 = split * g.kc, kend = min(k0 + g.kc, g.k);
  const int steps = (kend - k0 + kStepK - 1) / kStepK;
  // The FP32 tile (8G rows of kTileStride) after the warps' reduction buffers (4 warps' worth).
  float* red = reinterpret_cast<float*>(smem);
  float* tile = red + 4 * G * 32 * 32;

  for (std::int64_t batch = blockIdx.z; batch < g.batches; batch += gridDim.z) {
    const unsigned char* ab = a + batch * g.m * g.k * 2;
    const unsigned char* bb = b + batch * g.k * std::int64_t(g.n) * 2;

    float acc[G][8][4];
#pragma unroll
    for (int q = 0; q < G; ++q)
#pragma unroll
      for (int e = 0; e < 8; ++e)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[q][e][r] = 0.0f;

    const int stride = g.kc + 8;
    // This lane's first vector of B: row k0 + 2tq, column col0 + 8gq; of A: row gq, k 2tq.
    const std::int64_t row_bytes = std::int64_t(g.n) * 2;
    const int col = col0 + 8 * gq;
    const unsigned char* bl = bb + (k0 + 2 * tq) * row_bytes + col * 2;
    const unsigned char* al = smem + (gq * stride + 2 * tq) * 2;
    const StreamArgs sa{row_bytes, kend - k0 - 2 * tq, col, g.n, steps, stride * 16};
    // The warp's first pair of steps asked of L2, so that its DRAM reads overlap A's copy.
    prefetch_pair(bl, sa, 2 * warp);
    load_a<G>(ab, smem, g, k0);
    __syncthreads();
    if (g.n % 8 == 0)
      stream_b<T, G, true>(acc, bl, al, sa, warp);
    else  // a loop of its own: the vector loop keeps its registers
      stream_b<T, G, false>(acc, bl, al, sa, warp);
    __syncthreads();  // A's slice is read: its space holds the reduction

    // Warps 4-7 into 0-3, then 2-3 into 0-1, then 1 into 0 (fixed order: deterministic).
    for (int half = kWarps / 2; half >= 1; half /= 2) {
      if (warp >= half && warp < 2 * half) {
        float* r = red + (warp - half) * G * 32 * 32 + lane;
#pragma unroll
        for (int q = 0; q < G; ++q)
#pragma unroll
          for (int e = 0; e < 8; ++e)
#pragma unroll
            for (int i = 0; i < 4; ++i) r[((q * 8 + e) * 4 + i) * 32] = acc[q][e][i];
      }
      __syncthreads();
      if (warp < half) {
        const float* r = red + warp * G * 32 * 32 + lane;
#pragma unroll
        for (int q = 0; q < G; ++q)
#pragma unroll
          for (int e = 0; e < 8; ++e)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[q][e][i] += r[((q * 8 + e) * 4 + i) * 32];
      }
      __syncthreads();
    }
    // Warp 0's accumulators: C^T rows (n) gq and gq + 8 of MMA e, columns (m) 2tq and 2tq + 1.
    if (warp == 0) {
#pragma unroll
      for (int q = 0; q < G; ++q)
#pragma unroll
        for (int e = 0; e < 8; ++e)
#pragma unroll
          for (int i = 0; i < 4; ++i)
            tile[(q * 8 + 2 * tq + (i & 1)) * kTileStride + (i >> 1) * 64 + 8 * gq + e] =
                acc[q][e][i];
    }
    cluster.sync();  // every block's tile is complete and visible to the cluster

    // Block `split` sums elements split, split + splits, ... over the cluster in rank order.
    const int cols = min(kCols, g.n - col0);
    unsigned short* cb = reinterpret_cast<unsigned short*>(c) + batch * g.m * g.n + col0;
    for (int id = split * kThreads + tid; id < g.m * kCols; id += splits * kThreads) {
      const int r = id / kCols, cl = id % kCols;
      if (cl >= cols) continue;
      float sum = 0.0f;
      for (int s = 0; s < splits; ++s)
        sum += cluster.map_shared_rank(tile, s)[r * kTileStride + cl];
      cb[std::int64_t(r) * g.n + cl] = to_storage<T>(sum);
    }
    cluster.sync();  // the tiles stay until every block has read them
  }
#else
  (void)a, (void)b, (void)c, (void)g;
  __trap();  // needs thread block clusters (sm_90): never launched elsewhere
#endif
}

int row_groups(const Problem& p) {
  return p.m <= 8 ? 1 : 2;
}

// The longest k range a block keeps in shared memory (A's 8G rows at a stride of kc + 8), in
// steps of 16.
int max_steps(int groups) {
  return (kMaxShared / (8 * groups * 2) - 8) / kStepK;
}

// Whether this device launches thread block clusters and runs the kernel's sm_90 code (a build
// without sm_90 would JIT the __trap() body); false without a device, like the engine's check.
bool device_runs_skinny() {
  static const bool ok = [] {
    int device = 0, clusters = 0;
    cudaFuncAttributes attributes{};
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, device) != cudaSuccess ||
        cudaFuncGetAttributes(&attributes, skinny_kernel<MmaDtype::bf16, 1>) != cudaSuccess) {
      cudaGetLastError();  // clear the error the query left
      return false;
    }
    return clusters != 0 && attributes.ptxVersion >= 90;
  }();
  return ok;
}

template <MmaDtype T, int G>
void launch(const OpArgs& args, const SkinnyPlan& plan) {
  const Problem& p = *args.p;
  const auto kernel = skinny_kernel<T, G>;
  static const bool opted_in = bench::allow_shared_bytes(kernel, kMaxShared);
  (void)opted_in;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(plan.col_blocks * plan.splits), 1,
                        unsigned(std::min<std::int64_t>(p.b, 65535)));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = std::size_t(plan.shared_bytes);
  config.stream = args.stream;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = unsigned(plan.splits);
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  const SkinnyArgs g{p.b, int(p.m), int(p.n), int(p.k), plan.kc};
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<const unsigned char*>(args.inputs[0]),
                                static_cast<const unsigned char*>(args.inputs[1]),
                                static_cast<unsigned char*>(args.output), g));
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace

bool skinny_runs(const Problem& p) {
  if (p.op != Op::matmul || (p.dtype != DataType::fp16 && p.dtype != DataType::bf16)) return false;
  constexpr std::int64_t kMax = std::numeric_limits<int>::max() - 1024;
  if (p.m < 1 || p.m > 16 || p.n > kMax || p.k > kMax || p.m * p.n > kMax) return false;
  const std::int64_t steps = (p.k + kStepK - 1) / kStepK;
  if (steps > std::int64_t(kMaxSplits) * max_steps(row_groups(p))) return false;
  return device_runs_skinny();
}

SkinnyPlan skinny_plan(const Problem& p) {
  SkinnyPlan plan;
  plan.row_groups = row_groups(p);
  plan.col_blocks = int((p.n + kCols - 1) / kCols);
  const int steps = int((p.k + kStepK - 1) / kStepK), cap = max_steps(plan.row_groups);
  // Resident blocks: 2 per SM for one row group (__launch_bounds__), else 1.
  const std::int64_t resident = std::int64_t(plan.row_groups == 1 ? 2 : 1) * sm_count();
  std::int64_t splits = resident / (std::int64_t(plan.col_blocks) * p.b);
  splits = std::clamp<std::int64_t>(splits, 1, kMaxSplits);
  splits = std::min<std::int64_t>(splits, std::max(1, steps / kStepK));  // 16 steps a block
  splits = std::max<std::int64_t>(splits, (steps + cap - 1) / cap);      // A's slice fits
  int per = int((steps + splits - 1) / splits);
  if (const int whole = (per + kStepK - 1) / kStepK * kStepK; whole <= cap) per = whole;
  plan.splits = (steps + per - 1) / per;
  plan.kc = per * kStepK;
  const int a_bytes = 8 * plan.row_groups * (plan.kc + 8) * 2;
  const int reduce_bytes = (4 * 32 * 32 + 8 * kTileStride) * plan.row_groups * 4;
  plan.shared_bytes = std::max(a_bytes, reduce_bytes);
  return plan;
}

void skinny_launch(const OpArgs& args) {
  const Problem& p = *args.p;
  if (!skinny_runs(p))
    throw std::logic_error("matmul: variant 10 does not run " + p.str() +
                           " (fp16/bf16, m <= 16, an sm_90 device)");
  const SkinnyPlan plan = skinny_plan(p);
  if (p.dtype == DataType::fp16)
    return plan.row_groups == 1 ? launch<MmaDtype::fp16, 1>(args, plan)
                                : launch<MmaDtype::fp16, 2>(args, plan);
  return plan.row_groups == 1 ? launch<MmaDtype::bf16, 1>(args, plan)
                              : launch<MmaDtype::bf16, 2>(args, plan);
}

std::string skinny_describe(const Problem& p) {
  const SkinnyPlan plan = skinny_plan(p);
  return "v10 skinny-M mma.sync m16n8k16 " + bench::to_string(p.dtype) + " (C^T = B^T A^T, " +
         std::to_string(8 * plan.row_groups) + " rows of m), 128-column blocks of 8 warps, " +
         (p.n % 8 == 0 ? "16-byte" : "element") + " loads of B, cluster split-K " +
         std::to_string(plan.splits) + " of " + std::to_string(plan.kc);
}

}  // namespace ops::cuda
