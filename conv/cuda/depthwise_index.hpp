// The index math of the depthwise kernels (conv/cuda/depthwise_kernels.cu), shared with the CPU
// emulation of both kernels in tests/conv/test_depthwise_config.cpp: where a block works, which
// parts of an nchw block's staged window are padding, which vectors stage the image part, which
// cell a thread computes from which window offset, which strip an nhwc thread computes in which
// tile. Host and device (MYCONV_HD); the configuration they read is
// conv/cuda/depthwise_config.hpp's.
#pragma once

#include <cstdint>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// nchw: where block `block` works.
struct DepthwiseNchwBlock {
  std::int64_t plane0 = 0;     // first input plane, n * C + c
  int planes = 0;              // planes of this block (the last group may have fewer)
  int oy0 = 0, ox0 = 0;        // first output row and column of the tile
  int oy_end = 0, ox_end = 0;  // one past the last output row and column the tile writes
  int iy0 = 0, ix0 = 0;        // input coordinate of staged row 0 and column 0 (< 0: padding)
};
MYCONV_HD DepthwiseNchwBlock depthwise_nchw_block(const Im2colGeometry& g, const DepthwiseConfig& c,
                                                  std::int64_t block) {
  DepthwiseNchwBlock b;
  const int col_tile = int(block % c.col_tiles);
  block /= c.col_tiles;
  const int row_tile = int(block % c.row_tiles);
  const std::int64_t group = block / c.row_tiles;
  b.plane0 = group * c.planes;
  const std::int64_t left = std::int64_t(g.n) * g.c - b.plane0;
  b.planes = left < c.planes ? int(left) : c.planes;
  b.oy0 = row_tile * c.tile_h;
  b.ox0 = col_tile * c.tile_w;
  b.oy_end = depthwise_min(b.oy0 + c.tile_h, g.oh);
  b.ox_end = depthwise_min(b.ox0 + c.tile_w, g.ow);
  b.iy0 = b.oy0 * g.sh - g.ph;
  b.ix0 = b.ox0 * g.sw - g.pw;
  return b;
}

// nchw: the parts of a block's staged window that fall into the padding, per plane: rows
// [0, top) and [bottom, stage_rows), and in the rows between, columns [0, left) and
// [right, stage_cols). The rest is the image.
struct DepthwisePadding {
  int top = 0, bottom = 0, left = 0, right = 0;
};
MYCONV_HD DepthwisePadding depthwise_padding(const Im2colGeometry& g, const DepthwiseConfig& c,
                                             const DepthwiseNchwBlock& b) {
  DepthwisePadding p;
  p.top = depthwise_clamp(-b.iy0, 0, c.stage_rows);
  p.bottom = depthwise_clamp(g.h - b.iy0, p.top, c.stage_rows);
  p.left = depthwise_clamp(-b.ix0, 0, c.stage_cols);
  p.right = depthwise_clamp(g.w - b.ix0, p.left, c.stage_cols);
  return p;
}
// Padding cells of all of a block's planes.
MYCONV_HD int depthwise_pad_cells(const DepthwiseConfig& c, const DepthwisePadding& p, int planes) {
  const int full_rows = p.top + c.stage_rows - p.bottom;
  const int side_cols = p.left + c.stage_cols - p.right;
  return planes * (full_rows * c.stage_cols + (p.bottom - p.top) * side_cols);
}
// Shared-memory offset (in floats) of padding cell i < depthwise_pad_cells(...).
MYCONV_HD int depthwise_pad_cell(const DepthwiseConfig& c, const DepthwisePadding& p, int planes,
                                 int i) {
  const int full_rows = p.top + c.stage_rows - p.bottom;
  const int in_full = planes * full_rows * c.stage_cols;
  if (i < in_full) {
    const int per_plane = full_rows * c.stage_cols;
    const int b = i / per_plane, rest = i - b * per_plane;
    const int k = rest / c.stage_cols, col = rest - k * c.stage_cols;
    const int row = k < p.top ? k : p.bottom + (k - p.top);
    return b * c.stage_plane_floats + row * c.stage_stride + col;
  }
  i -= in_full;
  const int side_cols = p.left + c.stage_cols - p.right;
  const int per_plane = (p.bottom - p.top) * side_cols;
  const int b = i / per_plane, rest = i - b * per_plane;
  const int k = rest / side_cols, j = rest - k * side_cols;
  const int col = j < p.left ? j : p.right + (j - p.left);
  return b * c.stage_plane_floats + (p.top + k) * c.stage_stride + col;
}

// nchw, tiles narrower or shorter than the plane: the staged rows inside the image are read as
// aligned vectors of `vec` elements (vec divides W, so none straddles a row's end); slot v of a
// row starts at input column first + v * vec.
struct DepthwiseRowSlots {
  int first = 0;  // input column of the first slot (a multiple of vec)
  int slots = 0;  // slots per staged row (0 when the window misses the image's columns)
};
MYCONV_HD DepthwiseRowSlots depthwise_row_slots(const DepthwiseNchwBlock& b,
                                                const DepthwisePadding& p, int vec) {
  DepthwiseRowSlots s;
  const int lo = b.ix0 + p.left, hi = b.ix0 + p.right;  // image columns staged: [lo, hi)
  if (hi <= lo) return s;
  s.first = lo / vec * vec;
  s.slots = ((hi + vec - 1) / vec * vec - s.first) / vec;
  return s;
}

// nchw rows mode: item i (< planes * (pad.bottom - pad.top) * rs.slots) of a block's staging,
// one vector: where it is read and where its elements go.
struct DepthwiseRowItem {
  std::int64_t src = 0;  // element offset from the block's first plane
  int smem_row = 0;      // shared-memory offset (floats) of its staged row
  int col = 0;  // staged column of its element 0; element e goes to col + e when that is inside
                // [0, stage_cols) (the vector may overhang the window on either side)
};
MYCONV_HD DepthwiseRowItem depthwise_row_item(const Im2colGeometry& g, const DepthwiseConfig& c,
                                              const DepthwiseNchwBlock& b,
                                              const DepthwisePadding& pad,
                                              const DepthwiseRowSlots& rs, int vec, int i) {
  DepthwiseRowItem it;
  const int per_plane = (pad.bottom - pad.top) * rs.slots;
  const int pb = i / per_plane, rest = i - pb * per_plane;
  const int k = rest / rs.slots, v = rest - k * rs.slots;
  const int row = pad.top + k, col = rs.first + v * vec;
  it.src = std::int64_t(pb) * g.h * g.w + std::int64_t(b.iy0 + row) * g.w + col;
  it.smem_row = pb * c.stage_plane_floats + row * c.stage_stride;
  it.col = col - b.ix0;
  return it;
}

// nchw whole-plane mode: the shared-memory offset of input element (plane pb of the block, iy,
// ix), or -1 where the window does not stage it (a stride can leave the last rows and columns
// unused).
MYCONV_HD int depthwise_plane_cell(const DepthwiseConfig& c, const DepthwiseNchwBlock& b, int pb,
                                   int iy, int ix) {
  const int row = iy - b.iy0, col = ix - b.ix0;
  if (row >= c.stage_rows || col >= c.stage_cols) return -1;
  return pb * c.stage_plane_floats + row * c.stage_stride + col;
}

// nchw: a thread's cell `cell` (< planes * cell_rows * cell_cols) of a block: its plane within the
// block, its first output row and column, and the offset of its input window in shared memory.
struct DepthwiseNchwCell {
  int b = 0, oy = 0, ox = 0;
  int window = 0;  // floats from the staged tile's start; a multiple of 4
};
MYCONV_HD DepthwiseNchwCell depthwise_nchw_cell(const Im2colGeometry& g, const DepthwiseConfig& c,
                                                const DepthwiseNchwBlock& blk, int cell) {
  DepthwiseNchwCell r;
  const int per_plane = c.cell_rows * c.cell_cols;
  r.b = cell / per_plane;
  const int rest = cell - r.b * per_plane;
  const int cy = rest / c.cell_cols, cx = rest - cy * c.cell_cols;
  r.oy = blk.oy0 + cy * kDepthwiseCellH;
  r.ox = blk.ox0 + cx * kDepthwiseCellW;
  r.window = r.b * c.stage_plane_floats + cy * kDepthwiseCellH * g.sh * c.stage_stride +
             cx * kDepthwiseCellW * g.sw;
  return r;
}

// nhwc: a thread's place in its block: channel vector within the block's tile, row and strip
// within the block's pixel tile (channels fastest, then strips, then rows).
struct DepthwiseNhwcThread {
  int cv = 0, row = 0, strip = 0;
};
MYCONV_HD DepthwiseNhwcThread depthwise_nhwc_thread(const DepthwiseConfig& c, int tid) {
  DepthwiseNhwcThread t;
  t.cv = tid % c.cv_per_block;
  const int pixel = tid / c.cv_per_block;
  t.row = pixel / c.strips_per_block;
  t.strip = pixel - t.row * c.strips_per_block;
  return t;
}
// nhwc: the strip of kDepthwisePixels output pixels (n, oy, ox0 ...) thread t computes in tile
// `tile` (< c.tiles); valid is false where the tile overhangs the image.
struct DepthwiseNhwcStrip {
  int n = 0, oy = 0, ox0 = 0;
  bool valid = false;
};
MYCONV_HD DepthwiseNhwcStrip depthwise_nhwc_strip(const Im2colGeometry& g, const DepthwiseConfig& c,
                                                  std::int64_t tile, const DepthwiseNhwcThread& t) {
  DepthwiseNhwcStrip s;
  const int strip_block = int(tile % c.strip_blocks);
  tile /= c.strip_blocks;
  const int row_block = int(tile % c.row_blocks);
  s.n = int(tile / c.row_blocks);
  s.oy = row_block * c.rows_per_block + t.row;
  const int strip = strip_block * c.strips_per_block + t.strip;
  s.ox0 = strip * kDepthwisePixels;
  s.valid = s.oy < g.oh && strip < c.strips_per_row;
  return s;
}

}  // namespace conv
