// The staged depthwise kernels' (sub-variant 8.1) configuration and index math
// (conv/cuda/depthwise_config.hpp, conv/cuda/depthwise_index.hpp), on the CPU: runs everywhere,
// CUDA or not. The strip kernels (8.2) are tests/conv/test_depthwise_strip.cpp and
// test_depthwise_strip_emulation.cpp, in the same binary.
//   - the kernel choice, the support answers and their reasons;
//   - every configuration (automatic and forced: generic kernel, small blocks, few planes, a
//     capped grid) is one the launcher accepts, on fixed, MobileNet-v2 and randomized problems,
//     both layouts, 4- and 2-byte storage, 1..132 SMs;
//   - the choices on MobileNet-v2's ten depthwise layers on the H200 (specialized kernels, whole
//     warps busy, whole-plane blocks for the small maps, vector loads);
//   - a CPU emulation of both kernels' index math (the same helpers the kernels call): each nchw
//     block's staged window holds exactly the image and zeros in the padding, every cell reads
//     inside it, and both tilings write every output element exactly once, with the values of
//     the float64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_index.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv {
namespace {
// This file's helpers (problem sets, emulation) share names with the strip tests'
// (tests/conv/depthwise_strip_cases.hpp) but not their contents: a namespace of their own keeps
// them apart where one translation unit holds both (a unity build, -DMYCONV_UNITY=ON).
namespace config_test {

constexpr int kH200Sms = 132;

std::vector<Problem> parse_all(const std::vector<const char*>& texts) {
  std::vector<Problem> out;
  for (const char* t : texts) out.push_back(parse_problem(t));
  return out;
}

// MobileNet-v2's ten depthwise layers at batch 32 (experiments/shapes/mobilenet_v2.txt).
std::vector<Problem> mobilenet_dw(int mb = 32) {
  std::vector<Problem> out = parse_all({
      "g32mb32ic32ih112oc32kh3ph1",
      "g96mb32ic96ih112oc96kh3sh2ph1",
      "g144mb32ic144ih56oc144kh3ph1",
      "g144mb32ic144ih56oc144kh3sh2ph1",
      "g192mb32ic192ih28oc192kh3ph1",
      "g192mb32ic192ih28oc192kh3sh2ph1",
      "g384mb32ic384ih14oc384kh3ph1",
      "g576mb32ic576ih14oc576kh3ph1",
      "g576mb32ic576ih14oc576kh3sh2ph1",
      "g960mb32ic960ih7oc960kh3ph1",
  });
  for (Problem& p : out) p.mb = mb;
  return out;
}

// Small fixed depthwise problems: every kernel, multipliers 1-4, padding, dilation, odd and
// non-square sizes, outputs narrower than a cell, batch 1.
std::vector<Problem> fixed_problems() {
  return parse_all({
      "g8mb2ic8ih10oc8kh3ph1",                  // 3x3 s1
      "g4mb1ic4ih9oc8kh3sh2ph1",                // 3x3 s2, multiplier 2
      "g3mb2ic3ih13oc12kh5ph2",                 // 5x5 s1, multiplier 4
      "g5mb1ic5ih17iw11oc5kh5kw5sh2sw2ph2pw2",  // 5x5 s2, non-square input
      "g6mb1ic6ih12oc18kh3ph2dh1",              // dilation 2, multiplier 3: generic
      "g2mb3ic2ih7oc2kh7ph3",                   // 7x7: generic
      "g4mb1ic4ih9iw14oc4kh3kw5ph1pw2",         // non-square kernel: generic
      "g3mb2ic3ih8oc3kh3sh3ph1",                // stride 3: generic
      "g2mb1ic2ih11iw11oc2kh3kw3sh1sw2ph1pw1",  // unequal strides: generic
      "g1mb1ic1ih1oc1kh1",                      // one element
      "g7mb2ic7ih6iw5oc7kh2kw2",                // even kernel, no padding
      "g16mb1ic16ih1iw40oc16kh1kw3pw1",         // one row
      "g5mb2ic5ih3oc10kh3",                     // 1x1 output
      "g4mb1ic4ih20iw600oc4kh3kw3ph1pw1",       // wide rows
      "g2mb1ic2ih9iw3000oc2kh3kw3ph1pw1",       // rows wider than shared memory: column tiles
      "g3mb2ic3ih10oc3kh3sh2",                  // stride 2 leaves the last input row unused
      "g10mb1ic10ih7oc10kh3ph1",                // 7x7 maps: whole planes
      "g12mb3ic12ih14oc24kh3sh2ph1",            // whole planes, multiplier 2
  });
}

// Random depthwise problems: channels 1-24, multiplier 1-4, sizes 1-24
// (tests/conv/random_problems.hpp).
std::vector<Problem> random_problems(std::size_t count, unsigned seed) {
  return testing::randomized_depthwise_problems({}, count, seed, 24, 24, kDepthwiseMaxMultiplier);
}

std::vector<Problem> all_problems() {
  std::vector<Problem> out = fixed_problems();
  for (const Problem& p : mobilenet_dw()) out.push_back(p);
  for (const Problem& p : random_problems(40, 808)) out.push_back(p);
  return out;
}

// The staged kernels' configuration, whatever the automatic choice between the families.
DepthwiseChoice staged() {
  DepthwiseChoice c;
  c.sub_variant = 1;
  return c;
}

std::vector<DepthwiseChoice> choices() {
  std::vector<DepthwiseChoice> out(1, staged());
  DepthwiseChoice generic = staged();
  generic.allow_specialized = false;
  out.push_back(generic);
  for (int cells : {1, 8, 40}) {
    DepthwiseChoice c = staged();
    c.max_cells = cells;
    out.push_back(c);
  }
  for (int planes : {1, 3}) {
    DepthwiseChoice c = staged();
    c.max_planes = planes;
    out.push_back(c);
  }
  for (int blocks : {1, 3}) {
    DepthwiseChoice c = staged();
    c.max_blocks = blocks;
    out.push_back(c);
  }
  return out;
}

Im2colGeometry geometry(Problem p, Layout layout) {
  p.layout = layout;
  return make_im2col_geometry(p);
}

// ---- kernel choice and support ----------------------------------------------------------------

TEST(DepthwiseConfig, KernelChoice) {
  auto kernel = [](const char* text) {
    return depthwise_kernel_of(make_im2col_geometry(parse_problem(text)));
  };
  EXPECT_EQ(kernel("g8mb2ic8ih10oc8kh3ph1"), DepthwiseKernel::k3s1);
  EXPECT_EQ(kernel("g8mb2ic8ih10oc8kh3sh2ph1"), DepthwiseKernel::k3s2);
  EXPECT_EQ(kernel("g8mb2ic8ih10oc8kh5ph2"), DepthwiseKernel::k5s1);
  EXPECT_EQ(kernel("g8mb2ic8ih10oc16kh5sh2ph2"), DepthwiseKernel::k5s2);
  EXPECT_EQ(kernel("g8mb2ic8ih10oc8kh3ph1dh1"), DepthwiseKernel::generic);  // dilation 2
  EXPECT_EQ(kernel("g8mb2ic8ih10oc8kh3sh3"), DepthwiseKernel::generic);     // stride 3
  EXPECT_EQ(kernel("g8mb2ic8ih10oc8kh7ph3"), DepthwiseKernel::generic);     // 7x7
  EXPECT_EQ(kernel("g8mb2ic8ih10iw10oc8kh3kw5"), DepthwiseKernel::generic);
  EXPECT_EQ(kernel("g8mb2ic8ih10iw10oc8kh3kw3sh1sw2"), DepthwiseKernel::generic);
  EXPECT_EQ(depthwise_kernel_size(DepthwiseKernel::k5s2), 5);
  EXPECT_EQ(depthwise_kernel_stride(DepthwiseKernel::k5s2), 2);
  EXPECT_EQ(depthwise_nhwc_vec(DepthwiseKernel::k3s2), 4);
  EXPECT_EQ(depthwise_nhwc_vec(DepthwiseKernel::k5s1), 2);
  EXPECT_EQ(depthwise_nhwc_vec(DepthwiseKernel::generic), 2);
}

TEST(DepthwiseConfig, SupportAnswersSayWhy) {
  auto reason = [](const char* text, Layout layout = Layout::nchw) {
    return depthwise_unsupported_reason(geometry(parse_problem(text), layout));
  };
  EXPECT_EQ(reason("g32mb32ic32ih112oc32kh3ph1"), "");
  EXPECT_EQ(reason("g3mb2ic3ih13oc12kh5ph2"), "");  // multiplier 4
  EXPECT_EQ(reason("mb1ic1ih5oc3kh3"), "");         // groups == IC == 1
  EXPECT_NE(reason("mb2ic4ih9oc8kh3").find("not depthwise"), std::string::npos);
  EXPECT_NE(reason("g2mb2ic4ih9oc8kh3").find("not depthwise"), std::string::npos);
  EXPECT_NE(reason("g4mb2ic4ih9oc20kh3").find("multiplier OC/G = 5"), std::string::npos);
  // A window that cannot be staged: unsupported in nchw only.
  const char* huge = "g2mb1ic2ih200oc2kh99ph49dh2";
  EXPECT_NE(reason(huge).find("shared memory"), std::string::npos);
  EXPECT_EQ(reason(huge, Layout::nhwc), "");
  EXPECT_TRUE(depthwise_supported(geometry(parse_problem(huge), Layout::nhwc)));
}

// ---- configurations ---------------------------------------------------------------------------

TEST(DepthwiseConfig, IsConsistentForEveryProblemAndChoice) {
  int configs = 0;
  for (const Problem& p : all_problems())
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      const Im2colGeometry g = geometry(p, layout);
      ASSERT_TRUE(depthwise_supported(g)) << p.str() << " " << depthwise_unsupported_reason(g);
      for (int bytes : {4, 2})
        for (int sms : {1, 8, kH200Sms})
          for (const DepthwiseChoice& choice : choices()) {
            const DepthwiseConfig c = depthwise_config(g, bytes, sms, choice);
            const std::string what = p.str() + " " + to_string(layout) + " " +
                                     std::to_string(bytes) + " B, " + std::to_string(sms) +
                                     " SMs: " + depthwise_config_name(g, c);
            EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
            EXPECT_LE(c.threads, kDepthwiseMaxThreads) << what;
            EXPECT_LE(c.smem_bytes, kDepthwiseMaxSmemBytes) << what;
            if (!choice.allow_specialized) {
              EXPECT_EQ(c.kernel, DepthwiseKernel::generic) << what;
            }
            if (!c.nhwc && choice.max_cells > 0) {
              EXPECT_LE(c.planes * c.cell_rows * c.cell_cols, std::max(choice.max_cells, 1))
                  << what;
            }
            if (!c.nhwc && choice.max_planes > 0) {
              EXPECT_LE(c.planes, choice.max_planes) << what;
            }
            if (c.nhwc && choice.max_blocks > 0) {
              EXPECT_LE(c.grid_x, choice.max_blocks) << what;
            }
            ++configs;
          }
    }
  EXPECT_GT(configs, 1000);
}

TEST(DepthwiseConfig, MismatchesAreNamed) {
  const Im2colGeometry g = make_im2col_geometry(parse_problem("g8mb2ic8ih30oc8kh3ph1"));
  const DepthwiseConfig ok = depthwise_config(g, 4, kH200Sms, staged());
  ASSERT_EQ(depthwise_config_mismatch(g, 4, ok), "");
  DepthwiseConfig c = ok;
  c.kernel = DepthwiseKernel::k5s1;  // not this problem's kernel
  EXPECT_NE(depthwise_config_mismatch(g, 4, c), "");
  c = ok;
  c.kernel = DepthwiseKernel::generic;  // the generic kernel runs anything
  EXPECT_EQ(depthwise_config_mismatch(g, 4, c), "");
  c = ok;
  c.stage_vec = 3;
  EXPECT_NE(depthwise_config_mismatch(g, 4, c), "");
  c = ok;
  c.smem_bytes -= 4;
  EXPECT_NE(depthwise_config_mismatch(g, 4, c), "");
  c = ok;
  c.tile_h += 2;
  EXPECT_NE(depthwise_config_mismatch(g, 4, c), "");
  c = ok;
  c.grid_x += 1;
  EXPECT_NE(depthwise_config_mismatch(g, 4, c), "");
  c = ok;
  c.nhwc = true;
  EXPECT_NE(depthwise_config_mismatch(g, 4, c), "");
  const Im2colGeometry gh = geometry(parse_problem("g8mb2ic8ih30oc8kh3ph1"), Layout::nhwc);
  DepthwiseConfig h = depthwise_config(gh, 2, kH200Sms, staged());
  ASSERT_EQ(depthwise_config_mismatch(gh, 2, h), "");
  h.vec = 2;
  EXPECT_NE(depthwise_config_mismatch(gh, 2, h), "");
  h = depthwise_config(gh, 2, kH200Sms, staged());
  h.grid_y = 2;
  EXPECT_NE(depthwise_config_mismatch(gh, 2, h), "");
  EXPECT_NE(
      depthwise_config_mismatch(make_im2col_geometry(parse_problem("mb2ic4ih9oc8kh3")), 4, ok), "");
}

TEST(DepthwiseConfig, MobileNetLayersOnH200) {
  for (const Problem& p : mobilenet_dw())
    for (int bytes : {4, 2}) {
      const Im2colGeometry g = make_im2col_geometry(p);
      const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms, staged());
      const std::string what =
          p.str() + " " + std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
      std::cout << "[ CONFIG   ] " << what << "\n";
      EXPECT_EQ(c.kernel, p.sh == 1 ? DepthwiseKernel::k3s1 : DepthwiseKernel::k3s2) << what;
      const int cells = c.planes * c.cell_rows * c.cell_cols;
      EXPECT_GE(double(cells) / c.threads, 0.85) << what;  // few idle threads
      EXPECT_GE(c.grid_x, 2 * kH200Sms) << what;
      EXPECT_TRUE(c.vec_store || g.ow % 4 != 0) << what;
      if (g.ow <= 14) {
        EXPECT_TRUE(c.whole_planes) << what;
        EXPECT_GT(c.planes, 1) << what;
      }
      if (g.w % 4 == 0) {
        EXPECT_EQ(c.stage_vec, 4) << what;  // 16 bytes (fp32) or 8 (16-bit) per staging load
      }
      Problem q = p;
      q.layout = Layout::nhwc;
      const Im2colGeometry gh = make_im2col_geometry(q);
      const DepthwiseConfig h = depthwise_config(gh, bytes, kH200Sms, staged());
      const std::string hwhat =
          q.str() + " " + std::to_string(bytes) + " B: " + depthwise_config_name(gh, h);
      std::cout << "[ CONFIG   ] " << hwhat << "\n";
      EXPECT_EQ(h.vec, 4) << hwhat;
      EXPECT_TRUE(h.vec_io) << hwhat;  // every channel count divides by 4
      EXPECT_GE(h.threads, 128) << hwhat;
      EXPECT_GE(h.grid_x * h.grid_y, 2 * kH200Sms) << hwhat;
    }
  // The first layer: 224 threads of 8x28 cells, 16-row tiles of the full 112-wide row.
  const Im2colGeometry first = make_im2col_geometry(mobilenet_dw()[0]);
  const DepthwiseConfig c = depthwise_config(first, 4, kH200Sms, staged());
  EXPECT_EQ(c.threads, 224);
  EXPECT_EQ(c.tile_h, 16);
  EXPECT_EQ(c.tile_w, 112);
  EXPECT_EQ(c.row_tiles, 7);
  EXPECT_EQ(c.grid_x, 32 * 32 * 7);
  // The last: 32 whole 7x7 planes (8 cells each) per block.
  const Im2colGeometry last = make_im2col_geometry(mobilenet_dw().back());
  EXPECT_EQ(depthwise_config(last, 4, kH200Sms, staged()).planes, 32);
  EXPECT_EQ(depthwise_config(last, 4, kH200Sms, staged()).threads, 256);
}

TEST(DepthwiseConfig, SmallGridsKeepBlocksPerSm) {
  // Batch 1 of the 7x7 layer: 960 planes; 32 per block would leave 30 blocks for 132 SMs.
  const Im2colGeometry g = make_im2col_geometry(mobilenet_dw(1).back());
  const DepthwiseConfig c = depthwise_config(g, 4, kH200Sms, staged());
  EXPECT_GE(c.grid_x, std::min<std::int64_t>(2 * kH200Sms, 960));
  EXPECT_EQ(depthwise_config_mismatch(g, 4, c), "");
}

// ---- CPU emulation of the kernels' index math ---------------------------------------------------

struct Emulated {
  std::vector<double> out;  // the output, problem layout
  std::vector<int> writes;  // writes per output element
  std::string error;        // the first index error, "" when none
};

// The nchw kernel's blocks and threads, one after the other, through the helpers the kernel
// calls: padding pass, rows or whole-plane pass (vector alignment checked), the staged window
// compared with the image, then every cell from the window.
Emulated emulate_nchw(const Im2colGeometry& g, const DepthwiseConfig& c, const HostData& data) {
  Emulated e;
  e.out.assign(std::size_t(g.n) * g.oc * g.oh * g.ow, 0.0);
  e.writes.assign(e.out.size(), 0);
  const std::int64_t hw = std::int64_t(g.h) * g.w;
  std::vector<float> tile(std::size_t(c.planes) * c.stage_plane_floats);
  // Writes per staged cell: exactly one, or the kernel's threads would race on it.
  std::vector<int> staged(tile.size());
  auto stage = [&](int at, float v) {
    tile[std::size_t(at)] = v;
    ++staged[std::size_t(at)];
  };
  auto fail = [&](std::int64_t block, const std::string& what) {
    if (e.error.empty()) e.error = "block " + std::to_string(block) + ": " + what;
  };
  for (std::int64_t block = 0; block < c.grid_x && e.error.empty(); ++block) {
    const DepthwiseNchwBlock b = depthwise_nchw_block(g, c, block);
    std::fill(tile.begin(), tile.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(staged.begin(), staged.end(), 0);
    const DepthwisePadding pad = depthwise_padding(g, c, b);
    const int pads = depthwise_pad_cells(c, pad, b.planes);
    for (int i = 0; i < pads; ++i) {
      const int at = depthwise_pad_cell(c, pad, b.planes, i);
      if (at < 0 || at >= b.planes * c.stage_plane_floats)
        fail(block, "pad cell out of range");
      else
        stage(at, 0.0f);
    }
    const std::int64_t first = b.plane0 * hw;
    if (c.whole_planes) {
      if (first % c.stage_vec != 0) fail(block, "whole-plane run not aligned to its vectors");
      for (int i = 0; i < b.planes * hw; ++i) {
        const int pb = int(i / hw), rest = int(i - pb * hw);
        const int at = depthwise_plane_cell(c, b, pb, rest / g.w, rest % g.w);
        if (at >= 0) stage(at, data.src[std::size_t(first + i)]);
      }
    } else {
      const DepthwiseRowSlots rs = depthwise_row_slots(b, pad, c.stage_vec);
      const int items = b.planes * (pad.bottom - pad.top) * rs.slots;
      for (int i = 0; i < items; ++i) {
        const DepthwiseRowItem it = depthwise_row_item(g, c, b, pad, rs, c.stage_vec, i);
        const std::int64_t in_plane = it.src % hw;
        if ((first + it.src) % c.stage_vec != 0 || in_plane % g.w + c.stage_vec > g.w)
          fail(block, "row vector misaligned or straddling a row");
        for (int k = 0; k < c.stage_vec; ++k) {
          const int col = it.col + k;
          if (col >= 0 && col < c.stage_cols)
            stage(it.smem_row + col, data.src[std::size_t(first + it.src + k)]);
        }
      }
    }
    // The window holds the image and zeros in the padding, every cell written once.
    for (int pb = 0; pb < b.planes; ++pb)
      for (int row = 0; row < c.stage_rows; ++row)
        for (int col = 0; col < c.stage_cols; ++col) {
          const int iy = b.iy0 + row, ix = b.ix0 + col;
          const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
          const float want =
              inside ? data.src[std::size_t(first + pb * hw + std::int64_t(iy) * g.w + ix)] : 0.0f;
          const std::size_t at =
              std::size_t(pb * c.stage_plane_floats + row * c.stage_stride + col);
          const float got = tile[at];
          if (staged[at] != 1)
            fail(block, "staged cell (" + std::to_string(pb) + ", " + std::to_string(row) + ", " +
                            std::to_string(col) + ") written " + std::to_string(staged[at]) +
                            " times");
          if (!(got == want))
            fail(block, "staged cell (" + std::to_string(pb) + ", " + std::to_string(row) + ", " +
                            std::to_string(col) + ") is " + std::to_string(got) + ", not " +
                            std::to_string(want));
        }
    const int cells = b.planes * c.cell_rows * c.cell_cols;
    for (int i = 0; i < cells; ++i) {
      const DepthwiseNchwCell cell = depthwise_nchw_cell(g, c, b, i);
      if (cell.oy >= b.oy_end || cell.ox >= b.ox_end) continue;
      if (cell.window % 4 != 0) fail(block, "cell window not 16-byte aligned");
      const std::int64_t plane = b.plane0 + cell.b;
      const int n = int(plane / g.c), ch = int(plane % g.c);
      const int window_col = cell.window % c.stage_stride;
      for (int j = 0; j < c.multiplier; ++j) {
        const int oc = ch * c.multiplier + j;
        for (int py = 0; py < kDepthwiseCellH && cell.oy + py < b.oy_end; ++py)
          for (int px = 0; px < kDepthwiseCellW && cell.ox + px < b.ox_end; ++px) {
            double acc = 0;
            for (int r = 0; r < g.kh; ++r)
              for (int s = 0; s < g.kw; ++s) {
                const int row_in =
                    (cell.window / c.stage_stride) % c.stage_rows + py * g.sh + r * g.dh;
                const int col = window_col + px * g.sw + s * g.dw;
                if (row_in >= c.stage_rows || col >= c.stage_cols) {
                  fail(block, "cell reads outside the staged window");
                  continue;
                }
                acc += double(tile[std::size_t(cell.b * c.stage_plane_floats +
                                               row_in * c.stage_stride + col)]) *
                       data.wei[std::size_t(oc) * g.kh * g.kw + r * g.kw + s];
              }
            const std::size_t at =
                std::size_t((std::int64_t(n) * g.oc + oc) * g.oh + cell.oy + py) * g.ow +
                std::size_t(cell.ox + px);
            e.out[at] = acc;
            ++e.writes[at];
          }
      }
    }
  }
  return e;
}

// The nhwc kernel's threads over the grid, through the helpers the kernel calls.
Emulated emulate_nhwc(const Im2colGeometry& g, const DepthwiseConfig& c, const HostData& data) {
  Emulated e;
  e.out.assign(std::size_t(g.n) * g.oh * g.ow * g.oc, 0.0);
  e.writes.assign(e.out.size(), 0);
  for (int y = 0; y < c.grid_y; ++y)
    for (std::int64_t x = 0; x < c.grid_x; ++x)
      for (int tid = 0; tid < c.threads; ++tid) {
        const DepthwiseNhwcThread t = depthwise_nhwc_thread(c, tid);
        const int cv = y * c.cv_per_block + t.cv;
        if (cv >= c.channel_vectors) continue;
        for (std::int64_t tile = x; tile < c.tiles; tile += c.grid_x) {
          const DepthwiseNhwcStrip st = depthwise_nhwc_strip(g, c, tile, t);
          if (!st.valid) continue;
          for (int p = 0; p < kDepthwisePixels && st.ox0 + p < g.ow; ++p)
            for (int j = 0; j < c.vec; ++j) {
              const int oc = cv * c.vec + j;
              if (oc >= g.oc) continue;
              const int ci = oc / c.multiplier, ox = st.ox0 + p;
              double acc = 0;
              for (int r = 0; r < g.kh; ++r)
                for (int s = 0; s < g.kw; ++s) {
                  const int iy = st.oy * g.sh - g.ph + r * g.dh;
                  const int ix = ox * g.sw - g.pw + s * g.dw;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  acc += double(data.src[std::size_t(
                             ((std::int64_t(st.n) * g.h + iy) * g.w + ix) * g.c + ci)]) *
                         data.wei[std::size_t(oc) * g.kh * g.kw + r * g.kw + s];
                }
              const std::size_t at =
                  std::size_t(((std::int64_t(st.n) * g.oh + st.oy) * g.ow + ox) * g.oc + oc);
              e.out[at] = acc;
              ++e.writes[at];
            }
        }
      }
  return e;
}

// Every output written exactly once, with the reference's value (up to float rounding of the
// staged inputs: none here, the inputs are floats).
std::string check(const Problem& p, const Emulated& e, const HostData& data) {
  if (!e.error.empty()) return e.error;
  for (std::size_t i = 0; i < e.writes.size(); ++i)
    if (e.writes[i] != 1)
      return "output " + std::to_string(i) + " written " + std::to_string(e.writes[i]) + " times";
  std::vector<float> out(e.out.begin(), e.out.end());
  const bench::Correctness r =
      bench::compare(out.data(), data.ref.data(), out.size(),
                     bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
  return r.passed ? "" : r.message;
}

TEST(DepthwiseConfig, EmulatedKernelsWriteEveryOutputOnceWithTheReferenceValue) {
  std::vector<Problem> problems = fixed_problems();
  for (const Problem& p : random_problems(40, 909)) problems.push_back(p);
  for (const Problem& p : mobilenet_dw(1)) problems.push_back(p);  // batch 1: a few seconds
  int cases = 0;
  for (Problem p : problems)
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      p.layout = layout;
      const HostData data = make_host_data(p, 21);
      const Im2colGeometry g = make_im2col_geometry(p);
      const bool big = p.mb * p.ic * p.ih * p.iw > 200000;
      for (const DepthwiseChoice& choice : choices()) {
        if (big && (choice.max_cells == 1 || choice.max_blocks == 1)) continue;  // slow, no news
        for (int bytes : {4, 2}) {
          const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms, choice);
          ASSERT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
          const Emulated e =
              layout == Layout::nchw ? emulate_nchw(g, c, data) : emulate_nhwc(g, c, data);
          EXPECT_EQ(check(p, e, data), "")
              << p.str() << " " << bytes << " B: " << depthwise_config_name(g, c);
          ++cases;
        }
      }
    }
  EXPECT_GT(cases, 500);
}

}  // namespace config_test
}  // namespace
}  // namespace conv
