// The index math of the tensor-core kernels, checked on the CPU: the generic part shared by conv
// and the op suite's matmul (core/cuda/mma_index.hpp) and conv's own (conv/cuda/mma_index.hpp):
//   - ldmatrix, simulated as the PTX ISA describes it, fed the row addresses the kernels give,
//     delivers exactly the mma.sync fragments the ISA specifies (fp16/bf16 m16n8k16 and tf32
//     m16n8k8, operands A and B), and the accumulator layout covers the 16x8 tile once; so does
//     ldmatrix.trans from B tiles stored with rows k (the matmul's), and its tf32 4-byte loads;
//   - the shared-memory strides are conflict-free and aligned where the kernels rely on it;
//   - every vector of a k slice is loaded by exactly one thread;
//   - the column buffer of variant 5, multiplied by the weights, is the reference convolution;
//   - whole-vector nhwc gathers read 16-byte aligned runs of one tap;
//   - the tile choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "conv/cuda/mma_index.hpp"
#include "conv/data.hpp"
#include "conv/problem.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv {
namespace {

// ldmatrix.x4 as the PTX ISA describes it: lanes 8j..8j+7 give the row addresses of matrix j;
// lane l receives, in register j, bytes 4*(l%4)..+3 of row l/4 of matrix j.
std::vector<std::uint32_t> ldmatrix_x4(const std::vector<unsigned char>& shared,
                                       const std::vector<int>& row_address, int lane) {
  std::vector<std::uint32_t> regs(4);
  for (int j = 0; j < 4; ++j) {
    const int address = row_address[std::size_t(8 * j + lane / 4)] + 4 * (lane % 4);
    std::memcpy(&regs[std::size_t(j)], shared.data() + address, 4);
  }
  return regs;
}

// ldmatrix.x4.trans of 16-bit values: lane l receives, in register j, the values (2*(l%4), l/4)
// and (2*(l%4)+1, l/4) of matrix j (rows as stored, 16 bytes each), the first in the low half.
std::vector<std::uint32_t> ldmatrix_x4_trans(const std::vector<unsigned char>& shared,
                                             const std::vector<int>& row_address, int lane) {
  std::vector<std::uint32_t> regs(4);
  for (int j = 0; j < 4; ++j) {
    std::uint16_t lo = 0, hi = 0;
    const int col = lane / 4, row = 2 * (lane % 4);
    std::memcpy(&lo, shared.data() + row_address[std::size_t(8 * j + row)] + 2 * col, 2);
    std::memcpy(&hi, shared.data() + row_address[std::size_t(8 * j + row + 1)] + 2 * col, 2);
    regs[std::size_t(j)] = std::uint32_t(lo) | (std::uint32_t(hi) << 16);
  }
  return regs;
}

// A shared tile of `rows` rows at the kernels' stride, one 32-byte k step per row, each value
// naming its position: 16-bit values row * 64 + k, or 32-bit values row * 64 + k.
std::vector<unsigned char> labelled_tile(int rows, int element_bytes) {
  std::vector<unsigned char> s(std::size_t(rows * kMmaRowStride), 0);
  const int ks = kMmaStepBytes / element_bytes;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < ks; ++k) {
      const std::uint32_t label = std::uint32_t(r * 64 + k);
      std::memcpy(s.data() + r * kMmaRowStride + k * element_bytes, &label,
                  std::size_t(element_bytes));
    }
  return s;
}

std::uint32_t element(const std::vector<std::uint32_t>& regs, int index, int element_bytes) {
  if (element_bytes == 4) return regs[std::size_t(index)];
  const std::uint32_t word = regs[std::size_t(index / 2)];
  return index % 2 ? word >> 16 : word & 0xFFFF;
}

TEST(MmaIndex, LdmatrixDeliversTheAFragments) {
  for (int bytes : {2, 4}) {
    const std::vector<unsigned char> tile = labelled_tile(16, bytes);
    std::vector<int> address(32);
    for (int lane = 0; lane < 32; ++lane) {
      const LdmatrixRow r = ldmatrix_a_row(lane);
      address[std::size_t(lane)] = r.row * kMmaRowStride + r.chunk * kMmaVecBytes;
    }
    for (int lane = 0; lane < 32; ++lane) {
      const std::vector<std::uint32_t> regs = ldmatrix_x4(tile, address, lane);
      for (int i = 0; i < (bytes == 2 ? 8 : 4); ++i) {
        const MmaCoord c = bytes == 2 ? mma_m16n8k16_a(lane, i) : mma_m16n8k8_tf32_a(lane, i);
        EXPECT_EQ(element(regs, i, bytes), std::uint32_t(c.row * 64 + c.col))
            << bytes << "-byte values, lane " << lane << ", element " << i;
      }
    }
  }
}

TEST(MmaIndex, LdmatrixDeliversTheBFragmentsOfTwoTiles) {
  for (int bytes : {2, 4}) {
    // Rows of the column tile are n (pixels): 16 rows = two n8 tiles.
    const std::vector<unsigned char> tile = labelled_tile(16, bytes);
    std::vector<int> address(32);
    for (int lane = 0; lane < 32; ++lane) {
      const LdmatrixRow r = ldmatrix_b_row(lane);
      address[std::size_t(lane)] = r.row * kMmaRowStride + r.chunk * kMmaVecBytes;
    }
    for (int lane = 0; lane < 32; ++lane) {
      const std::vector<std::uint32_t> regs = ldmatrix_x4(tile, address, lane);
      for (int t = 0; t < 2; ++t) {  // registers 2t, 2t+1 are tile t's b0, b1
        const std::vector<std::uint32_t> frag = {regs[std::size_t(2 * t)],
                                                 regs[std::size_t(2 * t + 1)]};
        for (int i = 0; i < (bytes == 2 ? 4 : 2); ++i) {
          const MmaCoord c = bytes == 2 ? mma_m16n8k16_b(lane, i) : mma_m16n8k8_tf32_b(lane, i);
          // B's (k, n) is the tile's row n + 8t, value k.
          EXPECT_EQ(element(frag, i, bytes), std::uint32_t((c.col + 8 * t) * 64 + c.row))
              << bytes << "-byte values, lane " << lane << ", tile " << t << ", element " << i;
        }
      }
    }
  }
}

// A B tile stored with rows k and 16 columns n at the matmul's padded stride, each value labelled
// k * 64 + n (16-bit labels fit: k < 16, n < 16).
std::vector<unsigned char> labelled_k_rows_tile(int element_bytes) {
  const int stride = bench::mma_k_rows_stride(16, element_bytes);
  std::vector<unsigned char> s(std::size_t(16 * stride), 0);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 16; ++n) {
      const std::uint32_t label = std::uint32_t(k * 64 + n);
      std::memcpy(s.data() + k * stride + n * element_bytes, &label, std::size_t(element_bytes));
    }
  return s;
}

TEST(MmaIndex, LdmatrixTransDeliversTheBFragmentsFromKRows) {
  const int stride = bench::mma_k_rows_stride(16, 2);
  const std::vector<unsigned char> tile = labelled_k_rows_tile(2);
  std::vector<int> address(32);
  for (int lane = 0; lane < 32; ++lane) {
    const LdmatrixRow r = bench::ldmatrix_trans_b_row(lane);
    address[std::size_t(lane)] = r.row * stride + r.chunk * kMmaVecBytes;
  }
  for (int lane = 0; lane < 32; ++lane) {
    const std::vector<std::uint32_t> regs = ldmatrix_x4_trans(tile, address, lane);
    for (int t = 0; t < 2; ++t) {  // registers 2t, 2t+1 are tile t's b0, b1
      const std::vector<std::uint32_t> frag = {regs[std::size_t(2 * t)],
                                               regs[std::size_t(2 * t + 1)]};
      for (int i = 0; i < 4; ++i) {
        const MmaCoord c = mma_m16n8k16_b(lane, i);  // (k, n)
        EXPECT_EQ(element(frag, i, 2), std::uint32_t(c.row * 64 + c.col + 8 * t))
            << "lane " << lane << ", tile " << t << ", element " << i;
      }
    }
  }
}

// tf32 B from rows k: each lane reads its elements (k, n) of mma_m16n8k8_tf32_b with 4-byte loads
// at k * stride + n * 4; the 32 lanes of one load hit 32 distinct banks, for every tile width.
TEST(MmaIndex, Tf32KRowsLoadsAreConflictFree) {
  for (int bn : {64, 128, 256}) {
    const int stride = bench::mma_k_rows_stride(bn, 4);
    EXPECT_EQ(stride % 16, 0);
    for (int i = 0; i < 2; ++i) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; ++lane) {
        const MmaCoord c = mma_m16n8k8_tf32_b(lane, i);
        banks.insert((c.row * stride + c.col * 4) / 4 % 32);
      }
      EXPECT_EQ(banks.size(), 32u) << "bn " << bn << ", element " << i;
    }
  }
}

// The fragments, as specified, make the MMA a matrix product: A's and B's k indices pair up, and
// every operand and accumulator element is held exactly once.
TEST(MmaIndex, FragmentsCoverTheMatricesOnce) {
  std::set<std::pair<int, int>> a16, b16, a32, b32, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const MmaCoord x = mma_m16n8k16_a(lane, i);
      a16.insert({x.row, x.col});
    }
    for (int i = 0; i < 4; ++i) {
      const MmaCoord x = mma_m16n8k16_b(lane, i);
      b16.insert({x.row, x.col});
      const MmaCoord y = mma_m16n8k8_tf32_a(lane, i);
      a32.insert({y.row, y.col});
      const MmaCoord z = mma_m16n8_c(lane, i);
      c.insert({z.row, z.col});
      EXPECT_LT(z.row, 16);
      EXPECT_LT(z.col, 8);
    }
    for (int i = 0; i < 2; ++i) {
      const MmaCoord x = mma_m16n8k8_tf32_b(lane, i);
      b32.insert({x.row, x.col});
    }
  }
  EXPECT_EQ(a16.size(), 16u * 16u);
  EXPECT_EQ(b16.size(), 16u * 8u);
  EXPECT_EQ(a32.size(), 16u * 8u);
  EXPECT_EQ(b32.size(), 8u * 8u);
  EXPECT_EQ(c.size(), 16u * 8u);
}

TEST(MmaIndex, SharedStridesAreConflictFreeAndAligned) {
  // ldmatrix reads 8 rows x 16 bytes per matrix: the 8 rows must fall in 8 distinct 16-byte bank
  // groups (128 bytes of banks = 8 groups), from any starting row and chunk.
  for (int first = 0; first < 8; ++first)
    for (int chunk = 0; chunk < 4; ++chunk) {
      std::set<int> groups;
      for (int r = first; r < first + 8; ++r)
        groups.insert(((r * kMmaRowStride + chunk * kMmaVecBytes) / 16) % 8);
      EXPECT_EQ(groups.size(), 8u);
    }
  EXPECT_EQ(kMmaRowStride % 16, 0);
  // B tiles with rows k (16-bit values, ldmatrix.trans): the 8 rows of a matrix, 16 bytes each,
  // start in 8 distinct bank quads; rows stay 16-byte aligned (cp.async destinations).
  for (int bn : {64, 128, 256}) {
    const int stride = bench::mma_k_rows_stride(bn, 2);
    EXPECT_EQ(stride % 16, 0);
    for (int chunk = 0; chunk < bn / 8; ++chunk) {
      std::set<int> groups;
      for (int r = 0; r < 8; ++r) groups.insert((r * stride + chunk * 16) / 16 % 8);
      EXPECT_EQ(groups.size(), 8u) << "bn " << bn;
    }
  }
  // Output staging rows stay 16-byte aligned for the vector reads, in every tile and type.
  for (MmaTileShape t : kAllMmaTiles) {
    const MmaTileDims d = mma_tile_dims(t);
    for (int bytes : {2, 4})
      for (bool nhwc : {false, true})
        EXPECT_EQ(mma_out_stride(nhwc, d.bm, d.bn, bytes) * bytes % 16, 0);
  }
  // nchw staging: a warp's pair stores (rows g = 0..7 of a fragment, pixel pairs 2t) hit distinct
  // banks within each half-warp (64-bit) or warp (32-bit) phase.
  for (MmaTileShape t : kAllMmaTiles) {
    const MmaTileDims d = mma_tile_dims(t);
    for (int bytes : {2, 4}) {
      const int stride = mma_out_stride(false, d.bm, d.bn, bytes);
      const int lanes_per_phase = bytes == 2 ? 32 : 16;
      for (int phase = 0; phase < 32 / lanes_per_phase; ++phase) {
        std::set<int> banks;
        int words = 0;
        for (int lane = phase * lanes_per_phase; lane < (phase + 1) * lanes_per_phase; ++lane) {
          const MmaCoord c = mma_m16n8_c(lane, 0);
          const int byte = (c.row * stride + c.col) * bytes;
          for (int w = 0; w < 2 * bytes / 4; ++w, ++words) banks.insert((byte / 4 + w) % 32);
        }
        EXPECT_EQ(int(banks.size()), words) << "tile " << d.bm << "x" << d.bn << ", " << bytes;
      }
    }
  }
}

TEST(MmaIndex, EveryVectorOfASliceHasOneOwner) {
  for (MmaTileShape t : kAllMmaTiles) {
    const MmaTileDims d = mma_tile_dims(t);
    const int threads = 32 * (d.bm / d.wm) * (d.bn / d.wn);
    for (bool along_k : {false, true}) {
      std::vector<int> owners(std::size_t(d.bn * kMmaVecsPerRow), 0);
      const int per_thread = d.bn * kMmaVecsPerRow / threads;
      ASSERT_EQ(d.bn * kMmaVecsPerRow % threads, 0);
      for (int tid = 0; tid < threads; ++tid) {
        const MmaVecSlot s = mma_b_slot(tid, threads, along_k);
        ASSERT_LT(s.kv, kMmaVecsPerRow);
        for (int j = 0; j < per_thread; ++j) {
          const int row = s.mrow + j * threads / kMmaVecsPerRow;
          ASSERT_LT(row, d.bn);
          ++owners[std::size_t(row * kMmaVecsPerRow + s.kv)];
        }
        // Along m, the 32 lanes of a warp take 32 neighbouring pixels of one vector column.
        if (!along_k && tid % 32 != 0) {
          const MmaVecSlot prev = mma_b_slot(tid - 1, threads, along_k);
          EXPECT_EQ(s.kv, prev.kv);
          EXPECT_EQ(s.mrow, prev.mrow + 1);
        }
      }
      for (int n : owners) EXPECT_EQ(n, 1);
    }
    std::vector<int> owners(std::size_t(d.bm * kMmaVecsPerRow), 0);
    for (int id = 0; id < d.bm * kMmaVecsPerRow; ++id) {
      const MmaVecSlot s = mma_a_slot(id);
      ++owners[std::size_t(s.mrow * kMmaVecsPerRow + s.kv)];
    }
    for (int n : owners) EXPECT_EQ(n, 1);
  }
}

std::vector<Problem> problems() {
  std::vector<Problem> out = {
      parse_problem("mb2ic4ih9oc8kh3"),
      parse_problem("mb2ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1"),
      parse_problem("g4mb1ic8ih13oc8kh3ph1dh1"),
      parse_problem("g2mb2ic16ih6oc8kh3ph1"),
      parse_problem("mb1ic8ih5oc3kh2sh2"),
      parse_problem("g3mb1ic24ih5oc6kh1"),
  };
  out = testing::randomized_problems(std::move(out), 16, 31, {9, 5});
  std::vector<Problem> both;
  for (Problem p : out)
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      p.layout = layout;
      both.push_back(p);
    }
  return both;
}

// Variant 5's column buffer, built with the helpers and multiplied by the weights on the CPU,
// equals the float64 reference; its padding k hold zeros that multiply nothing.
TEST(MmaIndex, ColumnBufferGemmEqualsTheReference) {
  for (const Problem& p : problems())
    for (int bytes : {2, 4}) {
      SCOPED_TRACE(p.str() + " " + std::to_string(bytes) + "-byte values");
      const HostData data = make_host_data(p, 5);
      const Im2colGeometry g = make_im2col_geometry(p);
      const int kp = mma_padded_k(g.k, bytes);
      ASSERT_GE(kp, g.k);
      ASSERT_LT(kp - g.k, mma_vec_elements(bytes));
      ASSERT_EQ(kp * bytes % kMmaVecBytes, 0);
      std::vector<double> col(std::size_t(g.groups) * std::size_t(g.m) * std::size_t(kp), -1e300);
      for (int group = 0; group < g.groups; ++group)
        for (int m = 0; m < g.m; ++m)
          for (int k = 0; k < kp; ++k) {
            const std::int64_t off = k < g.k ? im2col_src_offset(g, group, k, m) : -1;
            col[std::size_t(mma_column_buffer_offset(g, kp, group, m, k))] =
                off < 0 ? 0.0 : data.src[std::size_t(off)];
          }
      for (double v : col) ASSERT_NE(v, -1e300) << "column buffer element not written";
      std::vector<double> out(data.ref.size(), std::nan(""));
      for (int group = 0; group < g.groups; ++group)
        for (int oc = 0; oc < g.ocg; ++oc)
          for (int m = 0; m < g.m; ++m) {
            double sum = 0;
            for (int k = 0; k < g.k; ++k)
              sum += double(data.wei[std::size_t(im2col_wei_offset(g, group, oc, k))]) *
                     col[std::size_t(mma_column_buffer_offset(g, kp, group, m, k))];
            out[std::size_t(im2col_dst_offset(g, group, oc, m))] = sum;
          }
      for (std::size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], data.ref[i], 1e-9 * (1 + std::fabs(data.ref[i]))) << "element " << i;
    }
}

// Variant 6's repacked input and weights (nhwc, channels padded to whole vectors with zeros),
// built with the helpers, convolved through the im2col GEMM of the repacked geometry, give the
// reference in the original output layout; every repacked gather is a whole-vector run.
TEST(MmaIndex, RepackedConvolutionEqualsTheReference) {
  for (const Problem& p : problems())
    for (int bytes : {2, 4}) {
      SCOPED_TRACE(p.str() + " " + std::to_string(bytes) + "-byte values");
      const HostData data = make_host_data(p, 5);
      const Im2colGeometry g = make_im2col_geometry(p);
      const Im2colGeometry r = mma_repacked_geometry(g, bytes);
      ASSERT_TRUE(mma_nhwc_vector_gather(r, bytes));
      ASSERT_GE(r.icg, g.icg);
      ASSERT_EQ(r.m, g.m);
      ASSERT_EQ(r.ocg, g.ocg);
      const bool nhwc = p.layout == Layout::nhwc;
      std::vector<double> src(std::size_t(r.n) * r.h * r.w * r.c, 0.0);
      for (int n = 0; n < g.n; ++n)
        for (int group = 0; group < g.groups; ++group)
          for (int c = 0; c < g.icg; ++c)
            for (int h = 0; h < g.h; ++h)
              for (int w = 0; w < g.w; ++w)
                src[std::size_t(mma_repacked_src_offset(r, n, group, c, h, w))] =
                    data.src[std::size_t(
                        act_offset(nhwc, n, group * g.icg + c, h, w, g.c, g.h, g.w))];
      std::vector<double> wei(std::size_t(r.oc) * r.k, 0.0);
      for (int o = 0; o < g.oc; ++o)
        for (int c = 0; c < g.icg; ++c)
          for (int rr = 0; rr < g.kh; ++rr)
            for (int s = 0; s < g.kw; ++s)
              wei[std::size_t(mma_repacked_wei_offset(r, o, c, rr, s))] =
                  data.wei[std::size_t(wei_offset(nhwc, o, c, rr, s, g.icg, g.kh, g.kw))];
      Im2colGeometry out = r;  // the output keeps the problem's layout
      out.nhwc = nhwc;
      std::vector<double> dst(data.ref.size(), std::nan(""));
      for (int group = 0; group < g.groups; ++group)
        for (int oc = 0; oc < g.ocg; ++oc)
          for (int m = 0; m < g.m; ++m) {
            double sum = 0;
            for (int k = 0; k < r.k; ++k) {
              const std::int64_t off = im2col_src_offset(r, group, k, m);
              if (off >= 0)
                sum += wei[std::size_t(im2col_wei_offset(r, group, oc, k))] * src[std::size_t(off)];
            }
            dst[std::size_t(im2col_dst_offset(out, group, oc, m))] = sum;
          }
      for (std::size_t i = 0; i < dst.size(); ++i)
        ASSERT_NEAR(dst[i], data.ref[i], 1e-9 * (1 + std::fabs(data.ref[i]))) << "element " << i;
    }
}

// Where the kernels load a whole vector per (pixel, tap) in nhwc, its k values are consecutive
// channels of one tap: one row entry gives the displacement, offsets run on by one, and the
// first is a multiple of the vector length (16-byte aligned).
TEST(MmaIndex, NhwcVectorGathersReadOneAlignedRun) {
  int checked = 0;
  for (const char* text : {"g2mb2ic16ih6oc8kh3ph1nhwc", "mb1ic8ih5oc3kh2sh2nhwc",
                           "g3mb1ic24ih5oc6kh1nhwc", "g2mb1ic8ih7oc4kh3ph1dh1nhwc"})
    for (int bytes : {2, 4}) {
      const Problem p = parse_problem(text);
      const Im2colGeometry g = make_im2col_geometry(p);
      const int vec = mma_vec_elements(bytes);
      if (!mma_nhwc_vector_gather(g, bytes)) continue;
      ++checked;
      ASSERT_EQ(g.k % vec, 0);
      for (int group = 0; group < g.groups; ++group)
        for (int m = 0; m < g.m; ++m)
          for (int k = 0; k < g.k; k += vec) {
            const Im2colRow16 first = im2col_row16(g, k);
            const std::int64_t base = im2col_src_offset(g, group, k, m);
            if (base >= 0) {
              EXPECT_EQ(base % vec, 0) << text;
            }
            for (int e = 0; e < vec; ++e) {
              const Im2colRow16 r = im2col_row16(g, k + e);
              EXPECT_EQ(r.dy, first.dy);
              EXPECT_EQ(r.dx, first.dx);
              EXPECT_EQ(r.offset, first.offset + e);
              const std::int64_t off = im2col_src_offset(g, group, k + e, m);
              EXPECT_EQ(off, base < 0 ? -1 : base + e);
            }
          }
    }
  EXPECT_GE(checked, 5);
  // Not for nchw, nor channels that do not fill vectors.
  EXPECT_FALSE(mma_nhwc_vector_gather(make_im2col_geometry(parse_problem("mb1ic16ih5oc3kh2")), 2));
  EXPECT_FALSE(
      mma_nhwc_vector_gather(make_im2col_geometry(parse_problem("mb1ic12ih5oc3kh2nhwc")), 2));
  EXPECT_TRUE(
      mma_nhwc_vector_gather(make_im2col_geometry(parse_problem("mb1ic12ih5oc3kh2nhwc")), 4));
}

TEST(MmaIndex, TileChoiceFillsTheGpu) {
  const int h200 = 132;
  auto tile = [&](const char* text) {
    return choose_mma_tile(make_im2col_geometry(parse_problem(text)), h200);
  };
  // Large layers keep the largest tile.
  EXPECT_EQ(tile("mb32ic128ih28oc128kh3ph1"), MmaTileShape::t128x128);
  // ResNet-50 res4 and res5: a 128x128 grid is under one wave (98 and 52 blocks).
  EXPECT_EQ(tile("mb32ic256ih14oc256kh3ph1"), MmaTileShape::t64x128);
  EXPECT_EQ(tile("mb32ic512ih7oc512kh3ph1"), MmaTileShape::t64x64);
  // 64 channels: never a 128-row tile.
  EXPECT_EQ(tile("mb32ic64ih56oc64kh3ph1"), MmaTileShape::t64x128);
  EXPECT_EQ(tile("mb1ic64ih7oc64kh3ph1"), MmaTileShape::t64x64);
  // Grouped and depthwise layers.
  EXPECT_EQ(tile("g32mb32ic32ih56oc32kh3ph1"), MmaTileShape::t32x64);
  for (const Problem& p : problems()) {
    const Im2colGeometry g = make_im2col_geometry(p);
    const MmaTileShape t = choose_mma_tile(g, h200);
    EXPECT_GE(mma_blocks(g, t), 1);
    EXPECT_LE(mma_tile_dims(t).bm, g.ocg <= 32 ? 32 : 128);
  }
  EXPECT_EQ(mma_tile_text(MmaTileShape::t128x128, 2), "128x128x32, 8 warps of 64x32");
}

TEST(MmaIndex, SplitKCoversEverySliceOnce) {
  for (int slices = 1; slices < 40; ++slices)
    for (int splits = 1; splits <= slices; ++splits) {
      EXPECT_EQ(mma_split_begin(slices, splits, 0), 0);
      EXPECT_EQ(mma_split_begin(slices, splits, splits), slices);
      for (int s = 0; s < splits; ++s) {
        const int n = mma_split_begin(slices, splits, s + 1) - mma_split_begin(slices, splits, s);
        EXPECT_GE(n, slices / splits);  // balanced to within one slice, none empty
        EXPECT_LE(n, slices / splits + 1);
      }
    }
}

TEST(MmaIndex, GroupedTileOrderCoversTheGridOnce) {
  for (int tiles_m : {1, 3, 8, 9, 17, 64})
    for (int tiles_n : {1, 2, 7, 40}) {
      std::set<std::pair<int, int>> seen;
      for (int t = 0; t < tiles_m * tiles_n; ++t) {
        int tm = -1, tn = -1;
        bench::grouped_tile_coords<8>(t, tiles_m, tiles_n, tm, tn);
        ASSERT_GE(tm, 0);
        ASSERT_LT(tm, tiles_m);
        ASSERT_GE(tn, 0);
        ASSERT_LT(tn, tiles_n);
        seen.insert({tm, tn});
      }
      EXPECT_EQ(int(seen.size()), tiles_m * tiles_n) << tiles_m << "x" << tiles_n;
    }
  // Within a group, consecutive blocks walk down a column of 8 tile rows.
  int tm = 0, tn = 0;
  bench::grouped_tile_coords<8>(9, 16, 4, tm, tn);
  EXPECT_EQ(tm, 1);
  EXPECT_EQ(tn, 1);
}

TEST(MmaIndex, PlanSplitsOnlyIdleGridsOfLongK) {
  const int h200 = 132;
  auto plan = [&](const char* text, int bytes, bool can_split) {
    return choose_mma_plan(make_im2col_geometry(parse_problem(text)), bytes, h200, can_split);
  };
  // Grids that fill the GPU, and kernels that cannot split, do not split.
  EXPECT_EQ(plan("mb32ic128ih28oc128kh3ph1", 2, true).splits, 1);
  EXPECT_EQ(plan("mb1ic256ih14oc256kh3ph1", 2, false).splits, 1);
  // Batch 1 at 14x14: 4 blocks of 64x64, K = 2304 (72 slices): split.
  const MmaPlan small = plan("mb1ic256ih14oc256kh3ph1", 2, true);
  EXPECT_GT(small.splits, 1);
  EXPECT_LE(small.splits, 72 / 8);
  // ResNet-50 res5 and res4 at batch 32: the 128x128 tile, split to reach 1.4 blocks per SM.
  EXPECT_EQ(plan("mb32ic512ih7oc512kh3ph1", 2, true).tile, MmaTileShape::t128x128);
  EXPECT_EQ(plan("mb32ic512ih7oc512kh3ph1", 2, true).splits, 4);
  EXPECT_EQ(plan("mb32ic256ih14oc256kh3ph1", 2, true).splits, 2);
  // A tiny grid steps down to smaller tiles first.
  EXPECT_EQ(plan("mb8ic512ih7oc512kh3ph1", 2, true).tile, MmaTileShape::t64x64);
  EXPECT_EQ(plan("mb8ic512ih7oc512kh3ph1", 2, true).splits, 4);
  // A short K is not split below 8 slices per split.
  EXPECT_EQ(plan("mb1ic16ih7oc64kh1", 2, true).splits, 1);
  for (const Problem& p : problems())
    for (int bytes : {2, 4}) {
      const Im2colGeometry g = make_im2col_geometry(p);
      const MmaPlan pl = choose_mma_plan(g, bytes, h200, true);
      EXPECT_GE(pl.splits, 1);
      EXPECT_LE(pl.splits * g.groups, 65535);
      if (pl.splits > 1) {
        EXPECT_GE(mma_slices(g, bytes) / pl.splits, 8);
      }
    }
  EXPECT_EQ(mma_tile_text(MmaTileShape::t32x64, 4), "32x64x16, 4 warps of 16x32");
}

}  // namespace
}  // namespace conv
