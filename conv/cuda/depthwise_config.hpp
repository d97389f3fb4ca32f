// The launch configuration of the depthwise convolution kernels (conv/cuda/depthwise_kernels.cu,
// variant 8 of im2col_gemm_cuda). Five families, numbered as sub-variants:
//   8.1 the staged kernels (any kernel size, stride, dilation, multiplier 1..4): which kernel (3x3
//       and 5x5 at stride 1 and 2 specialized, else the generic one), how the output is tiled
//       over blocks and threads, how the nchw input window is staged in shared memory;
//   8.2 the strip kernels (3x3, stride 1 or 2, multiplier 1; conv/cuda/depthwise_strip_config.hpp);
//   8.3 the nhwc pipelined strip kernel (the same, input rows through a cp.async ring in shared
//       memory; conv/cuda/depthwise_pipe.hpp);
//   8.4 the nchw whole-plane kernel (3x3, stride 1 or 2, multiplier 1: several whole planes per
//       block in shared memory as stored, 16-byte copies in and out;
//       conv/cuda/depthwise_plane.hpp);
//   8.5 the nhwc whole-image kernel (the same for nhwc maps of up to 3072 pixels: one image's
//       slice of channels per block; conv/cuda/depthwise_image.hpp);
//   8.6 the nhwc direct kernel (3x3, stride 1 or 2, multiplier 1: a thread per channel vector
//       and item of outputs, the window through L1; conv/cuda/depthwise_direct.hpp).
// The choice between them is depthwise_config's rule below; whether a configuration fits a
// problem, and its name: conv/cuda/depthwise_config_check.hpp. Host-only C++ (the few MYCONV_HD
// helpers compile for the device too; the index math the kernels run is
// conv/cuda/depthwise_index.hpp). Unit-tested without a GPU by tests/conv/test_depthwise_config.cpp
// (configurations, and a CPU emulation of both kernels' index math against a direct convolution).
//
// Depthwise here: groups == IC (one input channel per group) and a channel multiplier
// M = OC/G of 1..kDepthwiseMaxMultiplier; output channel o reads input channel o / M. The weights
// are [OC][KH][KW] in both layouts (nchw's [OC][IC/G][KH][KW] and nhwc's [OC][KH][KW][IC/G] are
// the same memory order when IC/G = 1).
//
// nchw: a block owns a tile of output rows x columns of `planes` input planes (several planes only
// where a tile is a whole plane: small maps) and stages the tile's input window, with the halo and
// zeros in the padding, in shared memory as floats ([plane][stage_rows][stage_stride]). Each thread
// then computes cells of kDepthwiseCellH x kDepthwiseCellW outputs of one plane from it, for each
// of the plane's M output channels (the window is staged once for all of them).
// nhwc: a thread owns V consecutive output channels (a channel vector: vector loads and stores
// where M = 1 and C % V == 0) and the filter taps of those channels in registers; for each tile of
// a grid-stride loop it computes a strip of kDepthwisePixels output pixels along W, sliding the
// window along the row in registers. A block is cv_per_block channel vectors x rows_per_block
// output rows x strips_per_block strips, so that the threads sharing input rows share an SM.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "conv/cuda/depthwise_direct.hpp"
#include "conv/cuda/depthwise_image.hpp"
#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_plane.hpp"
#include "conv/cuda/depthwise_strip_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Output channels per input channel up to which the kernels run. Each output channel costs the
// same loads of the staged window (nchw) or gathered scalar loads (nhwc, M > 1); at larger M the
// small-OC kernel (variant 7), which keeps all OC/G outputs of a pixel in registers and reads each
// input once, is the better shape.
inline constexpr int kDepthwiseMaxMultiplier = 4;
inline constexpr int kDepthwiseMaxThreads = 256;
inline constexpr int kDepthwiseMaxSmemBytes = 48 * 1024;  // no opt-in needed
// nchw: outputs per thread (a cell), rows x columns. 4 columns: one 16-byte (fp32) or 8-byte
// (16-bit) store per row, and a 16-byte aligned window in shared memory.
inline constexpr int kDepthwiseCellH = 2;
inline constexpr int kDepthwiseCellW = 4;
// nchw: most elements per global load while staging.
inline constexpr int kDepthwiseStageVec = 4;
// nhwc: output pixels per thread along W, most output rows per block, most channel vectors per
// block (a warp's worth: 32 lanes x 16 or 8 bytes contiguous).
inline constexpr int kDepthwisePixels = 4;
inline constexpr int kDepthwiseNhwcRows = 4;
inline constexpr int kDepthwiseNhwcLanes = 32;
// nhwc: blocks launched up to this many threads per SM (two full-occupancy waves on sm_90); more
// tiles than that are a grid-stride loop, so a thread loads its filter once for several strips.
inline constexpr int kDepthwiseThreadsPerSm = 4096;
// nchw, several planes per block: keep at least this many blocks per SM where planes allow.
inline constexpr int kDepthwiseMinBlocksPerSm = 2;

// The kernel: 3x3 or 5x5, stride 1 or 2 in both directions, dilation 1, specialized (filter taps
// and window unrolled at compile time); anything else generic (runtime sizes, weights read per
// tap).
enum class DepthwiseKernel { k3s1, k3s2, k5s1, k5s2, generic };

inline DepthwiseKernel depthwise_kernel_of(const Im2colGeometry& g) {
  if (g.dh != 1 || g.dw != 1 || g.sh != g.sw || (g.sh != 1 && g.sh != 2) || g.kh != g.kw)
    return DepthwiseKernel::generic;
  if (g.kh == 3) return g.sh == 1 ? DepthwiseKernel::k3s1 : DepthwiseKernel::k3s2;
  if (g.kh == 5) return g.sh == 1 ? DepthwiseKernel::k5s1 : DepthwiseKernel::k5s2;
  return DepthwiseKernel::generic;
}

// Kernel size and stride of a specialized kernel (0 for the generic one).
constexpr int depthwise_kernel_size(DepthwiseKernel k) {
  return k == DepthwiseKernel::k3s1 || k == DepthwiseKernel::k3s2   ? 3
         : k == DepthwiseKernel::k5s1 || k == DepthwiseKernel::k5s2 ? 5
                                                                    : 0;
}
constexpr int depthwise_kernel_stride(DepthwiseKernel k) {
  return k == DepthwiseKernel::k3s1 || k == DepthwiseKernel::k5s1   ? 1
         : k == DepthwiseKernel::k3s2 || k == DepthwiseKernel::k5s2 ? 2
                                                                    : 0;
}

// nhwc channels per thread: 4 for 3x3 (36 filter registers), 2 for 5x5 (50) and the generic kernel.
constexpr int depthwise_nhwc_vec(DepthwiseKernel k) {
  return depthwise_kernel_size(k) == 3 ? 4 : 2;
}

struct DepthwiseConfig {
  int sub_variant = 1;  // 1: the staged kernels; 2: the strip kernels (`strip` below); 3: the
                        // nhwc pipelined strip kernel (`pipe`); 4: the nchw whole-plane kernel
                        // (`plane`); 5: the nhwc whole-image kernel (`image`); 6: the nhwc
                        // direct kernel (`direct`)
  DepthwiseStripConfig strip;
  DepthwisePipeConfig pipe;
  DepthwisePlaneConfig plane;
  DepthwiseImageConfig image;
  DepthwiseDirectConfig direct;
  DepthwiseKernel kernel = DepthwiseKernel::generic;
  bool nhwc = false;
  int multiplier = 0;  // M = OC/G
  int threads = 0;     // per block (blockDim.x)
  std::int64_t grid_x = 0;
  int grid_y = 1;
  int smem_bytes = 0;  // dynamic shared memory (nchw)

  // nchw
  int planes = 0;                    // input planes per block (> 1 only for whole-plane tiles)
  int cell_rows = 0, cell_cols = 0;  // cells per plane of a tile
  int tile_h = 0, tile_w = 0;        // output rows, columns of a tile: cell_rows * 2, cell_cols * 4
  int row_tiles = 0, col_tiles = 0;  // tiles per plane
  std::int64_t plane_groups = 0;     // ceil(N * C / planes)
  int stage_rows = 0, stage_cols = 0;  // input window of a tile, halo included
  int stage_stride = 0;                // floats per staged row: stage_cols rounded up to 4
  int stage_plane_floats = 0;          // stage_rows * stage_stride
  int stage_vec = 0;                   // input elements per global load while staging: 1, 2 or 4
  bool whole_planes = false;  // one tile per plane: the block's planes are one contiguous run
  bool vec_store = false;     // OW % 4 == 0: a cell row is one vector store

  // nhwc
  int vec = 0;               // output channels per thread (V)
  bool vec_io = false;       // M == 1 and C % V == 0: vector loads and stores of V channels
  int channel_vectors = 0;   // ceil(OC / V)
  int cv_per_block = 0;      // channel vectors per block (grid.y tiles them)
  int rows_per_block = 0;    // output rows per block tile
  int strips_per_block = 0;  // strips of kDepthwisePixels pixels per block tile row
  int strips_per_row = 0;    // ceil(OW / kDepthwisePixels)
  int row_blocks = 0, strip_blocks = 0;  // block tiles per image: down, across
  std::int64_t tiles = 0;                // N * row_blocks * strip_blocks
};

// Overrides for tests and experiments: 0 (or true) keeps the automatic choice.
struct DepthwiseChoice {
  int sub_variant = 0;            // 1 to 6: that family (2 to 6 only where they run the problem)
  int strip_pixels = 0;           // 8.2 nchw: P, one of the shapes' for the problem's stride
  int strip_band = 0;             // 8.2, 8.3: output rows per thread
  int pipe_strips = 0;            // 8.3: most strips per block
  int plane_planes = 0;           // 8.4: most planes per block (rounded down to the alignment)
  int image_words = 0;            // 8.5: most channel words per block (32, 16, 8 or 4)
  DepthwiseDirectChoice direct;   // 8.6: outputs per item, channels per thread, vectors per block
  bool allow_specialized = true;  // false: the generic kernel even for 3x3 / 5x5
  int max_cells = 0;              // nchw: most cells per block (forces row and column tiles)
  int max_planes = 0;             // nchw: most planes per whole-plane block
  int max_blocks = 0;             // nhwc: most blocks along x (forces the grid-stride loop)
};

MYCONV_HD int depthwise_min(int a, int b) {
  return a < b ? a : b;
}
MYCONV_HD int depthwise_max(int a, int b) {
  return a > b ? a : b;
}
MYCONV_HD int depthwise_clamp(int v, int lo, int hi) {
  return v < lo ? lo : v > hi ? hi : v;
}
inline std::int64_t depthwise_ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// nchw: the staged input window of a tile of cell_rows x cell_cols cells (halo included).
inline int depthwise_stage_rows(const Im2colGeometry& g, int cell_rows) {
  return (cell_rows * kDepthwiseCellH - 1) * g.sh + (g.kh - 1) * g.dh + 1;
}
inline int depthwise_stage_cols(const Im2colGeometry& g, int cell_cols) {
  return (cell_cols * kDepthwiseCellW - 1) * g.sw + (g.kw - 1) * g.dw + 1;
}
inline std::int64_t depthwise_stage_floats(const Im2colGeometry& g, int cell_rows, int cell_cols) {
  return std::int64_t(depthwise_stage_rows(g, cell_rows)) *
         ((depthwise_stage_cols(g, cell_cols) + 3) / 4 * 4);
}

// Empty when the kernels can run g, else why not.
inline std::string depthwise_unsupported_reason(const Im2colGeometry& g) {
  if (g.m <= 0 || g.k <= 0 || g.ocg <= 0 || g.groups <= 0) return "empty problem";
  if (g.icg != 1)
    return "not depthwise: " + std::to_string(g.icg) +
           " input channels per group (variant 8 needs groups == IC)";
  if (g.ocg > kDepthwiseMaxMultiplier)
    return "channel multiplier OC/G = " + std::to_string(g.ocg) + " above " +
           std::to_string(kDepthwiseMaxMultiplier) + " (variant 7 takes those)";
  if (std::int64_t(g.oc) * g.oh * g.ow > INT_MAX)
    return "one output image (OC*OH*OW) exceeds 2^31-1 elements";
  if (std::int64_t(g.oc) > std::int64_t(65535) * kDepthwiseNhwcLanes * 2)
    return "more output channels than the grid's y dimension tiles";
  // nchw: every block has at least one cell, so this bounds grid.x.
  if (!g.nhwc && std::int64_t(g.n) * g.c * ((g.oh + kDepthwiseCellH - 1) / kDepthwiseCellH) *
                         ((g.ow + kDepthwiseCellW - 1) / kDepthwiseCellW) >
                     INT_MAX)
    return "more than 2^31-1 cells of 2x4 outputs (grid.x)";
  if (!g.nhwc && depthwise_stage_floats(g, 1, 1) * 4 > kDepthwiseMaxSmemBytes)
    return "the input window of one thread's outputs (" +
           std::to_string(depthwise_stage_rows(g, 1)) + "x" +
           std::to_string(depthwise_stage_cols(g, 1)) + " floats) exceeds 48 KB of shared memory";
  return "";
}
inline bool depthwise_supported(const Im2colGeometry& g) {
  return depthwise_unsupported_reason(g).empty();
}

// The largest power of two <= max_elems that divides n (1 for n == 0).
inline int depthwise_vec_dividing(std::int64_t n, int max_elems) {
  int v = max_elems;
  while (v > 1 && (n == 0 || n % v != 0)) v /= 2;
  return v;
}

namespace depthwise_detail {

inline void nchw_config(const Im2colGeometry& g, int elem_bytes, int sm_count,
                        const DepthwiseChoice& choice, DepthwiseConfig& c) {
  const int max_cells = choice.max_cells > 0 ? depthwise_min(choice.max_cells, kDepthwiseMaxThreads)
                                             : kDepthwiseMaxThreads;
  const std::int64_t max_floats = kDepthwiseMaxSmemBytes / 4;
  const int all_rows = int(depthwise_ceil_div(g.oh, kDepthwiseCellH));
  const int all_cols = int(depthwise_ceil_div(g.ow, kDepthwiseCellW));
  const std::int64_t planes_total = std::int64_t(g.n) * g.c;
  const std::int64_t plane_cells = std::int64_t(all_rows) * all_cols;
  const std::int64_t whole_floats = depthwise_stage_floats(g, all_rows, all_cols);

  if (plane_cells <= max_cells && whole_floats <= max_floats) {
    // Whole planes, as many per block as keep threads busy (cells / threads rounded up to warps)
    // while leaving kDepthwiseMinBlocksPerSm blocks per SM where the planes allow it.
    std::int64_t most =
        std::min<std::int64_t>({max_cells / plane_cells, max_floats / whole_floats, planes_total});
    if (choice.max_planes > 0) most = std::min<std::int64_t>(most, choice.max_planes);
    const std::int64_t min_blocks =
        std::min<std::int64_t>(std::int64_t(kDepthwiseMinBlocksPerSm) * sm_count, planes_total);
    int best = 1;
    double best_use = 0;
    for (int b = 1; b <= int(most); ++b) {
      if (b > 1 && depthwise_ceil_div(planes_total, b) < min_blocks) break;
      const std::int64_t cells = b * plane_cells;
      const double use = double(cells) / double(depthwise_ceil_div(cells, 32) * 32);
      if (use >= best_use) {  // ties: more planes, fewer blocks
        best = b;
        best_use = use;
      }
    }
    c.planes = best;
    c.cell_rows = all_rows;
    c.cell_cols = all_cols;
    c.row_tiles = c.col_tiles = 1;
  } else {
    // One plane per block: full-width tiles of as many cell rows as fit, balanced over the
    // plane; column tiles where one cell row of the full width does not fit.
    c.planes = 1;
    int cols = depthwise_min(all_cols, max_cells);
    while (cols > 1 && depthwise_stage_floats(g, 1, cols) > max_floats) --cols;
    c.col_tiles = int(depthwise_ceil_div(all_cols, cols));
    c.cell_cols = int(depthwise_ceil_div(all_cols, c.col_tiles));
    int rows = depthwise_min(all_rows, depthwise_max(1, max_cells / c.cell_cols));
    while (rows > 1 && depthwise_stage_floats(g, rows, c.cell_cols) > max_floats) --rows;
    c.row_tiles = int(depthwise_ceil_div(all_rows, rows));
    c.cell_rows = int(depthwise_ceil_div(all_rows, c.row_tiles));
  }
  c.tile_h = c.cell_rows * kDepthwiseCellH;
  c.tile_w = c.cell_cols * kDepthwiseCellW;
  c.plane_groups = depthwise_ceil_div(planes_total, c.planes);
  c.stage_rows = depthwise_stage_rows(g, c.cell_rows);
  c.stage_cols = depthwise_stage_cols(g, c.cell_cols);
  c.stage_stride = (c.stage_cols + 3) / 4 * 4;
  c.stage_plane_floats = c.stage_rows * c.stage_stride;
  c.whole_planes = c.row_tiles == 1 && c.col_tiles == 1;
  // Staging loads of up to 4 elements (16 bytes of fp32, 8 of 16-bit: 16-byte loads of 16-bit
  // elements would double the registers of the staging batch), aligned where they never straddle
  // a row (row mode) or the block's run of planes (whole planes; every block's run starts at a
  // multiple of its length).
  const int max_vec = std::min(kDepthwiseStageVec, 16 / elem_bytes);
  c.stage_vec = c.whole_planes ? depthwise_vec_dividing(std::int64_t(c.planes) * g.h * g.w, max_vec)
                               : depthwise_vec_dividing(g.w, max_vec);
  c.vec_store = g.ow % kDepthwiseCellW == 0;
  const int cells = c.planes * c.cell_rows * c.cell_cols;
  c.threads = int(depthwise_ceil_div(cells, 32) * 32);
  c.grid_x = c.plane_groups * c.row_tiles * c.col_tiles;
  c.grid_y = 1;
  c.smem_bytes = c.planes * c.stage_plane_floats * 4;
}

inline void nhwc_config(const Im2colGeometry& g, int sm_count, const DepthwiseChoice& choice,
                        DepthwiseConfig& c) {
  c.vec = depthwise_nhwc_vec(c.kernel);
  c.vec_io = c.multiplier == 1 && g.c % c.vec == 0;
  c.channel_vectors = int(depthwise_ceil_div(g.oc, c.vec));
  const int cv_tiles = int(depthwise_ceil_div(c.channel_vectors, kDepthwiseNhwcLanes));
  c.cv_per_block = int(depthwise_ceil_div(c.channel_vectors, cv_tiles));
  const int pixel_threads = depthwise_max(1, kDepthwiseMaxThreads / c.cv_per_block);
  c.strips_per_row = int(depthwise_ceil_div(g.ow, kDepthwisePixels));
  const int rows = depthwise_min(depthwise_min(g.oh, kDepthwiseNhwcRows), pixel_threads);
  c.row_blocks = int(depthwise_ceil_div(g.oh, rows));
  c.rows_per_block = int(depthwise_ceil_div(g.oh, c.row_blocks));
  const int strips =
      depthwise_min(c.strips_per_row, depthwise_max(1, pixel_threads / c.rows_per_block));
  c.strip_blocks = int(depthwise_ceil_div(c.strips_per_row, strips));
  c.strips_per_block = int(depthwise_ceil_div(c.strips_per_row, c.strip_blocks));
  c.threads = c.cv_per_block * c.rows_per_block * c.strips_per_block;
  c.tiles = std::int64_t(g.n) * c.row_blocks * c.strip_blocks;
  c.grid_y = cv_tiles;
  const std::int64_t target =
      depthwise_ceil_div(std::int64_t(depthwise_max(sm_count, 1)) * kDepthwiseThreadsPerSm,
                         std::int64_t(c.threads) * cv_tiles);
  // The same number of tiles for every block (no block left with one tile more than the rest).
  std::int64_t blocks = std::min<std::int64_t>(c.tiles, std::max<std::int64_t>(target, 1));
  if (choice.max_blocks > 0) blocks = std::min<std::int64_t>(blocks, choice.max_blocks);
  blocks = std::min<std::int64_t>(blocks, INT_MAX);
  c.grid_x = depthwise_ceil_div(c.tiles, depthwise_ceil_div(c.tiles, blocks));
  c.smem_bytes = 0;
}

}  // namespace depthwise_detail

// The sub-variant the automatic choice takes for g, from MobileNet-v2's ten depthwise layers
// timed per sub-variant on an H200 (results/h200/20261126_conv_depthwise_variants/, cuDNN's time /
// ours). nchw: output maps of at most 14x14 the whole-plane kernel (8.4: 1.07-2.78 in every dtype,
// against 0.63-1.09 for the strips in 16-bit), larger maps the strips (8.2) in every dtype (fp32
// 1.63-2.04 against the staged kernels' 0.98-1.17; 16-bit 1.01-1.84). nhwc: output maps of at
// most 28x28 the direct kernel (8.6: 0.86-1.27 against 8.3/8.5's 0.47-0.89 on those seven layers,
// results/h200/20261128_conv_depthwise_nhwc_direct/), larger ones the pipelined strips (8.3: its
// rows in flight sit in shared memory, not beside 8.2's 9 * V filter registers; 0.83-1.15 there,
// 8.6's best shape 0.79-1.04). Everything else: the staged kernels (8.1).
inline int depthwise_sub_variant_for(const Im2colGeometry& g, int elem_bytes) {
  if (!g.nhwc && g.oh <= 14 && g.ow <= 14 &&
      depthwise_plane_unsupported_reason(g, elem_bytes).empty())
    return 4;
  if (g.nhwc && g.oh <= 28 && g.ow <= 28 &&
      depthwise_direct_unsupported_reason(g, elem_bytes).empty())
    return 6;
  if (!depthwise_strip_unsupported_reason(g, elem_bytes).empty()) return 1;
  if (g.nhwc) return depthwise_pipe_unsupported_reason(g, elem_bytes).empty() ? 3 : 2;
  return 2;
}

// The configuration for g with elem_bytes-byte storage (4: fp32, tf32; 2: fp16, bf16) on a GPU
// with sm_count SMs. Check depthwise_supported(g) first (and, for choice.sub_variant 2, 3 or 4,
// depthwise_strip_unsupported_reason, depthwise_pipe_unsupported_reason or
// depthwise_plane_unsupported_reason).
inline DepthwiseConfig depthwise_config(const Im2colGeometry& g, int elem_bytes, int sm_count,
                                        const DepthwiseChoice& choice = {}) {
  DepthwiseConfig c;
  const int sub =
      choice.sub_variant > 0 ? choice.sub_variant : depthwise_sub_variant_for(g, elem_bytes);
  if (sub == 6) {
    c.sub_variant = 6;
    c.nhwc = g.nhwc;
    c.multiplier = g.ocg;
    c.kernel = depthwise_kernel_of(g);
    c.direct = depthwise_direct_config(g, elem_bytes, choice.direct);
    c.threads = c.direct.threads;
    c.grid_x = c.direct.blocks;
    c.smem_bytes = c.direct.smem_bytes;
    return c;
  }
  if (sub == 5) {
    c.sub_variant = 5;
    c.nhwc = g.nhwc;
    c.multiplier = g.ocg;
    c.kernel = depthwise_kernel_of(g);
    c.image = depthwise_image_config(g, elem_bytes, sm_count, choice.image_words);
    c.threads = c.image.threads;
    c.grid_x = c.image.blocks;
    c.grid_y = 1;
    c.smem_bytes = c.image.smem_bytes;
    return c;
  }
  if (sub == 4) {
    c.sub_variant = 4;
    c.nhwc = g.nhwc;
    c.multiplier = g.ocg;
    c.kernel = depthwise_kernel_of(g);
    c.plane = depthwise_plane_config(g, elem_bytes, sm_count, choice.plane_planes);
    c.threads = c.plane.threads;
    c.grid_x = c.plane.blocks;
    c.grid_y = 1;
    c.smem_bytes = c.plane.smem_bytes;
    return c;
  }
  if (sub == 3) {
    c.sub_variant = 3;
    c.nhwc = g.nhwc;
    c.multiplier = g.ocg;
    c.kernel = depthwise_kernel_of(g);
    c.pipe = depthwise_pipe_config(g, elem_bytes, sm_count, choice.strip_band, choice.pipe_strips);
    c.threads = c.pipe.threads;
    c.grid_x = c.pipe.blocks;
    c.grid_y = 1;
    c.smem_bytes = c.pipe.smem_bytes;
    return c;
  }
  if (sub == 2) {
    c.sub_variant = 2;
    c.nhwc = g.nhwc;
    c.multiplier = g.ocg;
    c.kernel = depthwise_kernel_of(g);
    c.strip =
        depthwise_strip_config(g, elem_bytes, sm_count, choice.strip_pixels, choice.strip_band);
    c.threads = g.nhwc ? kDepthwiseStripNhwcThreads : kDepthwiseStripNchwThreads;
    c.grid_x = (c.strip.work + c.threads - 1) / c.threads;
    c.grid_y = 1;
    return c;
  }
  c.kernel = choice.allow_specialized ? depthwise_kernel_of(g) : DepthwiseKernel::generic;
  c.nhwc = g.nhwc;
  c.multiplier = g.ocg;
  if (g.nhwc)
    depthwise_detail::nhwc_config(g, sm_count, choice, c);
  else
    depthwise_detail::nchw_config(g, elem_bytes, sm_count, choice, c);
  return c;
}

}  // namespace conv
