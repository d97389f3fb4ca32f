// Whether a depthwise configuration fits a problem, and how it reads: the checks every launcher
// runs before a kernel (conv/cuda/depthwise_kernels.cu and the sub-variants' launchers) and the
// configuration's name in results and test output. The configurations themselves and the
// automatic choice are conv/cuda/depthwise_config.hpp. Host-only C++.
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {
// Empty when c is a configuration the kernels can run g with (as depthwise_config makes it,
// overrides included), else what does not fit.
inline std::string depthwise_config_mismatch(const Im2colGeometry& g, int elem_bytes,
                                             const DepthwiseConfig& c) {
  if (const std::string why = depthwise_unsupported_reason(g); !why.empty()) return why;
  if (c.nhwc != g.nhwc) return "layout does not match";
  if (c.multiplier != g.ocg) return "multiplier does not match OC/G";
  if (c.sub_variant == 2) {
    if (const std::string why = depthwise_strip_config_mismatch(g, elem_bytes, c.strip);
        !why.empty())
      return "8.2: " + why;
    const int threads = g.nhwc ? kDepthwiseStripNhwcThreads : kDepthwiseStripNchwThreads;
    if (c.threads != threads || c.grid_x != (c.strip.work + threads - 1) / threads || c.grid_y != 1)
      return "8.2: grid does not match the work";
    return "";
  }
  if (c.sub_variant == 3) {
    if (const std::string why = depthwise_pipe_config_mismatch(g, elem_bytes, c.pipe); !why.empty())
      return "8.3: " + why;
    if (c.threads != c.pipe.threads || c.grid_x != c.pipe.blocks || c.grid_y != 1 ||
        c.smem_bytes != c.pipe.smem_bytes)
      return "8.3: grid does not match the tiles";
    return "";
  }
  if (c.sub_variant == 4) {
    if (const std::string why = depthwise_plane_config_mismatch(g, elem_bytes, c.plane);
        !why.empty())
      return "8.4: " + why;
    if (c.threads != c.plane.threads || c.grid_x != c.plane.blocks || c.grid_y != 1 ||
        c.smem_bytes != c.plane.smem_bytes)
      return "8.4: grid does not match the planes";
    return "";
  }
  if (c.sub_variant == 5) {
    if (const std::string why = depthwise_image_config_mismatch(g, elem_bytes, c.image);
        !why.empty())
      return "8.5: " + why;
    if (c.threads != c.image.threads || c.grid_x != c.image.blocks || c.grid_y != 1 ||
        c.smem_bytes != c.image.smem_bytes)
      return "8.5: grid does not match the images";
    return "";
  }
  if (c.sub_variant == 6) {
    if (const std::string why = depthwise_direct_config_mismatch(g, elem_bytes, c.direct);
        !why.empty())
      return "8.6: " + why;
    if (c.threads != c.direct.threads || c.grid_x != c.direct.blocks || c.grid_y != 1 ||
        c.smem_bytes != c.direct.smem_bytes)
      return "8.6: grid does not match the items";
    return "";
  }
  if (c.sub_variant != 1) return "sub-variant must be 1 to 6";
  if (c.kernel != DepthwiseKernel::generic && c.kernel != depthwise_kernel_of(g))
    return "the specialized kernel does not match the kernel size, stride or dilation";
  if (c.threads < 1 || c.threads > kDepthwiseMaxThreads) return "threads out of range";
  if (c.grid_x < 1 || c.grid_x > INT_MAX || c.grid_y < 1 || c.grid_y > 65535)
    return "grid out of range";
  if (!c.nhwc) {
    if (c.planes < 1 || c.cell_rows < 1 || c.cell_cols < 1) return "empty tile";
    if (c.tile_h != c.cell_rows * kDepthwiseCellH || c.tile_w != c.cell_cols * kDepthwiseCellW)
      return "tile size does not match its cells";
    if (std::int64_t(c.row_tiles) * c.tile_h < g.oh ||
        std::int64_t(c.col_tiles) * c.tile_w < g.ow ||
        std::int64_t(c.row_tiles - 1) * c.tile_h >= g.oh ||
        std::int64_t(c.col_tiles - 1) * c.tile_w >= g.ow)
      return "tiles do not cover the output exactly";
    if (c.whole_planes != (c.row_tiles == 1 && c.col_tiles == 1))
      return "whole_planes does not match the tiles";
    if (c.planes > 1 && !c.whole_planes) return "several planes per block need whole-plane tiles";
    if (c.plane_groups != depthwise_ceil_div(std::int64_t(g.n) * g.c, c.planes))
      return "plane groups do not match";
    if (c.stage_rows != depthwise_stage_rows(g, c.cell_rows) ||
        c.stage_cols != depthwise_stage_cols(g, c.cell_cols) ||
        c.stage_stride != (c.stage_cols + 3) / 4 * 4 ||
        c.stage_plane_floats != c.stage_rows * c.stage_stride)
      return "staged window does not match the tile";
    if (std::int64_t(c.planes) * c.stage_plane_floats * 4 > kDepthwiseMaxSmemBytes ||
        c.smem_bytes != c.planes * c.stage_plane_floats * 4)
      return "smem_bytes does not match or exceeds 48 KB";
    const std::int64_t run = c.whole_planes ? std::int64_t(c.planes) * g.h * g.w : g.w;
    if (c.stage_vec < 1 || c.stage_vec > std::min(kDepthwiseStageVec, 16 / elem_bytes) ||
        (c.stage_vec & (c.stage_vec - 1)) || run % c.stage_vec != 0)
      return "stage_vec must be a power of two of at most 16 bytes dividing the staged runs";
    if (c.vec_store != (g.ow % kDepthwiseCellW == 0)) return "vec_store does not match OW";
    if (c.threads < c.planes * c.cell_rows * c.cell_cols || c.threads % 32 != 0)
      return "threads must cover the cells in whole warps";
    if (c.grid_x != c.plane_groups * c.row_tiles * c.col_tiles || c.grid_y != 1)
      return "grid does not match the tiles";
    return "";
  }
  if (c.vec != depthwise_nhwc_vec(c.kernel)) return "vec is not the kernel's";
  if (c.vec_io != (c.multiplier == 1 && g.c % c.vec == 0)) return "vec_io does not match";
  if (c.channel_vectors != depthwise_ceil_div(g.oc, c.vec)) return "channel vectors do not match";
  if (c.cv_per_block < 1 || std::int64_t(c.cv_per_block) * c.grid_y < c.channel_vectors ||
      std::int64_t(c.cv_per_block) * (c.grid_y - 1) >= c.channel_vectors)
    return "channel tiles do not cover the channel vectors exactly";
  if (c.strips_per_row != depthwise_ceil_div(g.ow, kDepthwisePixels)) return "strips do not match";
  if (c.rows_per_block < 1 || c.strips_per_block < 1 ||
      std::int64_t(c.row_blocks) * c.rows_per_block < g.oh ||
      std::int64_t(c.strip_blocks) * c.strips_per_block < c.strips_per_row)
    return "block tiles do not cover the image";
  if (c.threads != c.cv_per_block * c.rows_per_block * c.strips_per_block)
    return "threads do not match the block tile";
  if (c.tiles != std::int64_t(g.n) * c.row_blocks * c.strip_blocks || c.grid_x > c.tiles)
    return "tiles do not match";
  if (c.smem_bytes != 0) return "the nhwc kernel uses no dynamic shared memory";
  return "";
}

inline const char* depthwise_kernel_name(DepthwiseKernel k) {
  switch (k) {
    case DepthwiseKernel::k3s1:
      return "3x3 s1 specialized";
    case DepthwiseKernel::k3s2:
      return "3x3 s2 specialized";
    case DepthwiseKernel::k5s1:
      return "5x5 s1 specialized";
    case DepthwiseKernel::k5s2:
      return "5x5 s2 specialized";
    case DepthwiseKernel::generic:
      return "generic";
  }
  return "unknown";
}

// e.g. "8.1 staged kernel, nchw, 3x3 s1 specialized, 2x4 outputs per thread, block 224 threads
// = 1 plane x 8x28 cells, tile 16x112, stage 18x114 floats (9.0 KB) by 4-element loads, grid
// 7168x1"; "8.1 staged kernel, nhwc, generic 7x7 s1 d1 (weights read per tap), 4 px x 2 channels
// per thread (scalar gathers), multiplier 2, block 240 threads = 30 channel vectors x 4 rows x 2
// strips, grid 1024x8 over 1024 tiles".
inline std::string depthwise_config_name(const Im2colGeometry& g, const DepthwiseConfig& c) {
  auto num = [](std::int64_t v) { return std::to_string(v); };
  if (c.sub_variant == 6)
    return "8.6 direct kernel, nhwc, " + depthwise_direct_config_name(c.direct);
  if (c.sub_variant == 5)
    return "8.5 whole-image kernel, nhwc, " + depthwise_image_config_name(c.image);
  if (c.sub_variant == 4)
    return "8.4 whole-plane kernel, nchw, " + depthwise_plane_config_name(c.plane);
  if (c.sub_variant == 3)
    return "8.3 pipelined strip kernel, nhwc, " + depthwise_pipe_config_name(c.pipe);
  if (c.sub_variant == 2)
    return std::string("8.2 strip kernel, ") + (c.nhwc ? "nhwc, " : "nchw, ") +
           depthwise_strip_config_name(g, c.strip) + ", block " + num(c.threads) +
           " threads, grid " + num(c.grid_x);
  std::string s = std::string("8.1 staged kernel, ") + (c.nhwc ? "nhwc, " : "nchw, ") +
                  depthwise_kernel_name(c.kernel);
  if (c.kernel == DepthwiseKernel::generic)
    s += " " + num(g.kh) + "x" + num(g.kw) + " s" + num(g.sh) +
         (g.sw != g.sh ? "x" + num(g.sw) : "") + " d" + num(g.dh) +
         (g.dw != g.dh ? "x" + num(g.dw) : "") + " (weights read per tap)";
  else
    s += " (filter in registers)";
  if (c.multiplier > 1) s += ", multiplier " + num(c.multiplier);
  if (!c.nhwc) {
    char kb[32];
    std::snprintf(kb, sizeof kb, "%.1f KB", c.smem_bytes / 1024.0);
    s += ", " + num(kDepthwiseCellH) + "x" + num(kDepthwiseCellW) + " outputs per thread, block " +
         num(c.threads) + " threads = " + num(c.planes) + (c.planes == 1 ? " plane" : " planes") +
         " x " + num(c.cell_rows) + "x" + num(c.cell_cols) + " cells, tile " + num(c.tile_h) + "x" +
         num(c.tile_w) + ", stage " + num(c.stage_rows) + "x" + num(c.stage_cols) + " floats (" +
         kb + ") by " + num(c.stage_vec) + "-element loads" +
         (c.whole_planes ? " of whole planes" : "") + ", grid " + num(c.grid_x);
    return s;
  }
  s += ", " + num(kDepthwisePixels) + " px x " + num(c.vec) + " channels per thread (" +
       (c.vec_io ? "vector loads" : "scalar gathers") + "), block " + num(c.threads) +
       " threads = " + num(c.cv_per_block) + " channel vectors x " + num(c.rows_per_block) +
       " rows x " + num(c.strips_per_block) + " strips, grid " + num(c.grid_x) + "x" +
       num(c.grid_y) + " over " + num(c.tiles) + " tiles";
  return s;
}

}  // namespace conv
