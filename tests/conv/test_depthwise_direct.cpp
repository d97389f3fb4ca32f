// The nhwc direct depthwise kernel (sub-variant 8.6): configuration
// (conv/cuda/depthwise_direct.hpp) and index math on the CPU, in test_depthwise_config's binary:
//   - which problems it takes and why not; the automatic shape and every override is one the
//     launcher accepts;
//   - a CPU emulation of every block and thread as the kernel runs them
//     (conv/cuda/depthwise_direct_kernels.cu): the taps staged per block ([tap][channel], zeros
//     past the last channel), each thread's item through the kernel's own
//     depthwise_direct_outputs reading only pixels inside the image at aligned channel vectors;
//     every output written exactly once and bit-identical to the taps summed in (r, s) order with
//     fmaf (what every depthwise kernel computes), within the float64 reference's tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_direct.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "tests/conv/depthwise_nhwc_check.hpp"

namespace conv {
namespace {
// A namespace of its own: the other depthwise tests' helpers share names (unity builds).
namespace direct_test {

Im2colGeometry nhwc_geometry(Problem p) {
  p.layout = Layout::nhwc;
  return make_im2col_geometry(p);
}

std::vector<Problem> problems() {
  std::vector<Problem> out;
  for (const char* t :
       {"g16mb2ic16ih10oc16kh3ph1", "g32mb1ic32ih9oc32kh3sh2ph1", "g8mb1ic8ih13iw17oc8kh3kw3ph1pw1",
        "g24mb3ic24ih15iw9oc24kh3kw3sh2sw2ph1pw1", "g16mb1ic16ih1iw1oc16kh3kw3ph1pw1",
        "g64mb1ic64ih12oc64kh3", "g8mb2ic8ih12oc8kh3ph2", "g48mb2ic48ih7oc48kh3ph1",
        "g4mb1ic4ih5oc4kh3ph1", "g12mb2ic12ih6iw11oc12kh3kw3sh2sw2ph1pw1",
        "g576mb1ic576ih14oc576kh3ph1", "g192mb1ic192ih28oc192kh3sh2ph1",
        "g960mb1ic960ih7oc960kh3ph1", "g72mb1ic72ih9oc72kh3ph1"})
    out.push_back(parse_problem(t));
  return out;
}

struct Emulation {
  const Im2colGeometry& g;
  const HostData& data;
  DataType dt;
  std::vector<float> out;
  std::vector<int> writes;
  std::string error;
  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
};

template <int S, int R, int P, int E>
void emulate_block(Emulation& e, const DepthwiseDirectConfig& c, int block) {
  const Im2colGeometry& g = e.g;
  const int bc = c.words * E;
  const DepthwiseDirectThread first = depthwise_direct_thread(c, block, 0);
  const int ch0 = (first.cv - first.cv_local) * E;
  std::vector<float> taps(std::size_t(kDepthwiseDirectTaps) * bc, NAN);
  for (int i = 0; i < kDepthwiseDirectTaps * bc; ++i) {
    const int lc = i / kDepthwiseDirectTaps, tap = i % kDepthwiseDirectTaps, ch = ch0 + lc;
    taps[std::size_t(tap * bc + lc)] =
        ch < g.c ? e.data.wei[std::size_t(ch * kDepthwiseDirectTaps + tap)] : 0.0f;
  }
  for (int tid = 0; tid < c.threads && e.error.empty(); ++tid) {
    const DepthwiseDirectThread t = depthwise_direct_thread(c, block, tid);
    if (t.n != first.n || t.cv - t.cv_local != first.cv - first.cv_local)
      e.fail("a block's threads disagree on its image or channels");
    if (t.cv >= c.channel_vectors || t.item >= c.items) continue;
    if (t.n < 0 || t.n >= g.n) {
      e.fail("image out of range");
      continue;
    }
    const int oy0 = t.item / c.strips * R, ox0 = (t.item % c.strips) * P;
    auto in = [&](int iy, int ix, float(&x)[E]) {
      if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) e.fail("read outside the image");
      const std::int64_t at = act_offset(true, t.n, t.cv * E, iy, ix, g.c, g.h, g.w);
      if (at % E != 0) e.fail("input vector misaligned");
      for (int j = 0; j < E; ++j) x[j] = e.data.src[std::size_t(at + j)];
    };
    auto tap = [&](int k, float(&w)[E]) {
      for (int j = 0; j < E; ++j) w[j] = taps[std::size_t(k * bc + t.cv_local * E + j)];
    };
    float acc[R][P][E];
    depthwise_direct_outputs<S, R, P, E>(g, in, tap, oy0, ox0, acc);
    for (int q = 0; q < R; ++q)
      for (int p = 0; p < P; ++p) {
        if (oy0 + q >= g.oh || ox0 + p >= g.ow) continue;
        const std::int64_t at = act_offset(true, t.n, t.cv * E, oy0 + q, ox0 + p, g.c, g.oh, g.ow);
        if (at % E != 0 || at + E > std::int64_t(e.out.size())) {
          e.fail("output vector misaligned or outside");
          continue;
        }
        for (int j = 0; j < E; ++j) {
          e.out[std::size_t(at + j)] = bench::round_to(e.dt, acc[q][p][j]);
          ++e.writes[std::size_t(at + j)];
        }
      }
  }
}

template <int S, int E>
void emulate_by_pixels(Emulation& e, const DepthwiseDirectConfig& c, int block) {
  if (c.rows == 1 && c.pixels == 2) emulate_block<S, 1, 2, E>(e, c, block);
  if (c.rows == 1 && c.pixels == 4) emulate_block<S, 1, 4, E>(e, c, block);
  if (c.rows == 2 && c.pixels == 2) emulate_block<S, 2, 2, E>(e, c, block);
}

void emulate(Emulation& e, const DepthwiseDirectConfig& c) {
  for (int block = 0; block < int(c.blocks) && e.error.empty(); ++block) {
    if (c.stride == 1 && c.vec == 4) emulate_by_pixels<1, 4>(e, c, block);
    if (c.stride == 1 && c.vec == 8) emulate_by_pixels<1, 8>(e, c, block);
    if (c.stride == 2 && c.vec == 4) emulate_by_pixels<2, 4>(e, c, block);
    if (c.stride == 2 && c.vec == 8) emulate_by_pixels<2, 8>(e, c, block);
  }
}

std::string check(const Problem& p, const Emulation& e) {
  if (!e.error.empty()) return e.error;
  return testing::check_nhwc_3x3(p, e.g, e.data, e.dt, e.out, e.writes);
}

DepthwiseChoice direct_choice(int pixels, int vec, int words, int min_blocks = -1, int rows = 0) {
  DepthwiseChoice c;
  c.sub_variant = 6;
  c.direct = DepthwiseDirectChoice{pixels, vec, words, min_blocks, rows};
  return c;
}

TEST(DepthwiseDirect, SupportAndConfigurations) {
  const Problem dw = parse_problem("g16mb2ic16ih14oc16kh3ph1");
  EXPECT_EQ(depthwise_direct_unsupported_reason(nhwc_geometry(dw), 2), "");
  Problem nchw = dw;
  nchw.layout = Layout::nchw;
  EXPECT_NE(depthwise_direct_unsupported_reason(make_im2col_geometry(nchw), 2), "");
  EXPECT_NE(
      depthwise_direct_unsupported_reason(nhwc_geometry(parse_problem("g6mb2ic6ih14oc6kh3ph1")), 4),
      "");  // 6 channels: not whole 4-channel vectors
  EXPECT_NE(depthwise_direct_unsupported_reason(
                nhwc_geometry(parse_problem("g16mb2ic16ih14oc32kh3ph1")), 4),
            "");  // multiplier 2
  EXPECT_NE(depthwise_direct_unsupported_reason(
                nhwc_geometry(parse_problem("g16mb2ic16ih14oc16kh5ph2")), 4),
            "");  // 5x5
  EXPECT_NE(depthwise_direct_unsupported_reason(
                nhwc_geometry(parse_problem("g16mb2ic16ih14oc16kh3sh3ph1")), 4),
            "");  // stride 3
  // The automatic shape: 4 channels per thread; 16-bit stride 1 items of 2 x 2 (7 x 7 of them on
  // a 14x14 map: W = 8 leaves 15 of 64 slots idle), else 1 x 4; W the smallest dividing the
  // channel vectors with at most a quarter of the slots idle.
  const DepthwiseDirectConfig b5 =
      depthwise_direct_config(nhwc_geometry(parse_problem("g576mb32ic576ih14oc576kh3ph1")), 2);
  EXPECT_EQ(b5.vec, 4);
  EXPECT_EQ(b5.rows, 2);
  EXPECT_EQ(b5.pixels, 2);
  EXPECT_EQ(b5.words, 8);
  EXPECT_EQ(b5.min_blocks, 0);
  const DepthwiseDirectConfig s2 =
      depthwise_direct_config(nhwc_geometry(parse_problem("g576mb32ic576ih14oc576kh3sh2ph1")), 4);
  EXPECT_EQ(s2.vec, 4);
  EXPECT_EQ(s2.rows, 1);
  EXPECT_EQ(s2.pixels, 4);
  EXPECT_EQ(s2.words, 16);  // 14 items of 1 x 4 on a 7x7 map: 8 would leave 18 of 32 slots idle
  const DepthwiseDirectConfig b3 =
      depthwise_direct_config(nhwc_geometry(parse_problem("g144mb32ic144ih56oc144kh3sh2ph1")), 4);
  EXPECT_EQ(b3.rows, 2);  // fp32, stride 2, a 28x28 output map
  EXPECT_EQ(b3.min_blocks, 2);
  EXPECT_EQ(b3.words, 8);  // 36 vectors: none of 8, 16, 32 divides
  int configs = 0;
  for (const Problem& p : problems())
    for (int bytes : {4, 2}) {
      const Im2colGeometry g = nhwc_geometry(p);
      if (!depthwise_direct_unsupported_reason(g, bytes).empty()) continue;
      for (int pixels : {0, 1, 2, 4})
        for (int vec : {0, 4, 8})
          for (int words : {0, 8, 16, 32})
            for (int min_blocks : {-1, 0, 2})
              for (int rows : {0, 1, 2}) {
                const DepthwiseConfig c = depthwise_config(
                    g, bytes, 132, direct_choice(pixels, vec, words, min_blocks, rows));
                EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
                ++configs;
              }
    }
  EXPECT_GT(configs, 3000);
}

TEST(DepthwiseDirect, EmulatedKernelWritesEveryOutputOnceBitExact) {
  int cases = 0;
  for (Problem p : problems())
    for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16}) {
      p.layout = Layout::nhwc;
      p.dtype = dt;
      const int bytes = bench::storage_bytes(dt);
      const Im2colGeometry g = make_im2col_geometry(p);
      if (!depthwise_direct_unsupported_reason(g, bytes).empty()) continue;
      const HostData data = make_host_data(p, 47);
      for (const DepthwiseChoice& choice :
           {direct_choice(0, 0, 0), direct_choice(2, 4, 8, 2), direct_choice(2, 8, 16, 0, 2),
            direct_choice(4, 8, 32), direct_choice(2, 4, 16)}) {
        const DepthwiseConfig c = depthwise_config(g, bytes, 132, choice);
        ASSERT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
        Emulation e{g,
                    data,
                    dt,
                    std::vector<float>(data.ref.size(), 0.0f),
                    std::vector<int>(data.ref.size(), 0),
                    ""};
        emulate(e, c.direct);
        EXPECT_EQ(check(p, e), "") << p.str() << ": " << depthwise_config_name(g, c);
        ++cases;
      }
    }
  EXPECT_GT(cases, 100);
}

TEST(DepthwiseDirect, EmulationCatchesAWrongItemMap) {
  Problem p = parse_problem("g16mb1ic16ih14iw15oc16kh3kw3ph1pw1");
  p.layout = Layout::nhwc;
  p.dtype = DataType::fp32;
  const Im2colGeometry g = make_im2col_geometry(p);
  const HostData data = make_host_data(p, 3);
  DepthwiseConfig c = depthwise_config(g, 4, 132, direct_choice(2, 4, 0));
  ASSERT_EQ(c.direct.strips, 8);
  c.direct.strips = 7;  // items of 2 over 15 columns counted as 7 strips: column 14 never written
  c.direct.items = g.oh * 7;
  Emulation e{g,
              data,
              DataType::fp32,
              std::vector<float>(data.ref.size(), 0.0f),
              std::vector<int>(data.ref.size(), 0),
              ""};
  emulate(e, c.direct);
  EXPECT_NE(check(p, e), "");
}

}  // namespace direct_test
}  // namespace
}  // namespace conv
