// The depthwise strip kernels (sub-variants 8.2 and 8.3): configuration
// (conv/cuda/depthwise_strip_config.hpp, conv/cuda/depthwise_pipe.hpp) and index math
// (conv/cuda/depthwise_strip.hpp, depthwise_pipe.hpp) on the CPU, in test_depthwise_config's
// binary:
//   - which problems they take and why not, and the automatic choice among 8.1 to 8.5;
//   - every configuration (automatic, forced bands and strip widths) is one the launcher accepts,
//     on fixed, MobileNet-v2 and randomized 3x3 problems, both layouts, 4- and 2-byte storage;
//   - a CPU emulation of every thread: the kernels' own per-thread algorithm
//     (depthwise_strip_band) with host loads and stores that check each access (aligned to its
//     vector, inside the tensor, a core vector inside its row, each input row of the band loaded
//     once; 8.3: each tile vector copied by exactly one thread, the window's columns in the
//     tile), every output written exactly once and bit-identical to the taps summed in (r, s)
//     order with fmaf (what every depthwise kernel computes), within the float64 reference's
//     tolerance;
//   - why the 16-bit kernels keep FP32 products and sums: packed half2 / bfloat162 arithmetic
//     over a 3x3 window, emulated, misses the tolerance the suite holds every kernel to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_strip.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"

namespace conv {
namespace {

constexpr int kH200Sms = 132;

std::vector<Problem> parse_all(const std::vector<const char*>& texts) {
  std::vector<Problem> out;
  for (const char* t : texts) out.push_back(parse_problem(t));
  return out;
}

// MobileNet-v2's ten depthwise layers (experiments/shapes/mobilenet_v2.txt).
std::vector<Problem> mobilenet_dw(int mb) {
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

// 3x3 problems for the strips' edges: partial last strips and bands, odd and tiny sizes, rows
// wider than a strip by one, padding 0 and 2 (nhwc only), stride 2 with odd W, one pixel.
std::vector<Problem> fixed_problems() {
  return parse_all({
      "g8mb2ic8ih10oc8kh3ph1",
      "g16mb1ic16ih9oc16kh3sh2ph1",
      "g8mb1ic8ih13iw17oc8kh3kw3ph1pw1",
      "g24mb2ic24ih15iw9oc24kh3kw3sh2sw2ph1pw1",
      "g8mb1ic8ih1iw1oc8kh3kw3ph1pw1",
      "g16mb1ic16ih2iw40oc16kh3kw3ph1pw1",
      "g8mb1ic8ih12oc8kh3",                     // no padding (nchw: 8.1)
      "g8mb1ic8ih12oc8kh3ph2",                  // padding 2 (nchw: 8.1)
      "g8mb3ic8ih11iw33oc8kh3kw3sh2sw2ph1pw1",  // odd W at stride 2: element loads
      "g32mb1ic32ih7oc32kh3ph1",
      "g40mb1ic40ih14oc40kh3sh2ph1",
      "g8mb1ic8ih30iw28oc8kh3kw3ph1pw1",  // W = 28: 4-element strips
      "g12mb2ic12ih6iw16oc12kh3kw3ph1pw1",
  });
}

// Random 3x3 problems the strips run (stride 1 or 2, padding 1 in nchw; channels in whole
// 16-byte vectors for nhwc) and some they do not (channels off the vector, other padding).
std::vector<Problem> random_problems(std::size_t count, unsigned seed) {
  std::vector<Problem> out;
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < count) {
    Problem p;
    p.g = pick(0, 3) == 0 ? pick(1, 24) : 8 * pick(1, 4);
    p.ic = p.oc = p.g;
    p.mb = pick(1, 3);
    p.ih = pick(1, 30);
    p.iw = pick(1, 30);
    p.kh = p.kw = 3;
    p.sh = p.sw = pick(1, 2);
    p.ph = pick(0, 4) == 0 ? pick(0, 2) : 1;
    p.pw = pick(0, 4) == 0 ? pick(0, 2) : 1;
    if (p.validate().empty() && p.unsupported_reason().empty()) out.push_back(p);
  }
  return out;
}

Im2colGeometry geometry(Problem p, Layout layout) {
  p.layout = layout;
  return make_im2col_geometry(p);
}

DepthwiseChoice strips(int pixels = 0, int band = 0) {
  DepthwiseChoice c;
  c.sub_variant = 2;
  c.strip_pixels = pixels;
  c.strip_band = band;
  return c;
}

DepthwiseChoice pipe(int band = 0, int strips_per_block = 0) {
  DepthwiseChoice c;
  c.sub_variant = 3;
  c.strip_band = band;
  c.pipe_strips = strips_per_block;
  return c;
}

// ---- support and choice -------------------------------------------------------------------------

TEST(DepthwiseStrip, SupportAnswersSayWhy) {
  auto reason = [](const char* text, Layout layout, int bytes = 2) {
    return depthwise_strip_unsupported_reason(geometry(parse_problem(text), layout), bytes);
  };
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    EXPECT_EQ(reason("g32mb2ic32ih112oc32kh3ph1", layout), "");
    EXPECT_EQ(reason("g32mb2ic32ih112oc32kh3sh2ph1", layout), "");
    EXPECT_NE(reason("g8mb2ic8ih10oc16kh3ph1", layout).find("multiplier 2"), std::string::npos);
    EXPECT_NE(reason("g8mb2ic8ih10oc8kh5ph2", layout).find("3x3"), std::string::npos);
    EXPECT_NE(reason("g8mb2ic8ih10oc8kh3ph2dh1", layout).find("dilated"), std::string::npos);
    EXPECT_NE(reason("g8mb2ic8ih10oc8kh3sh3ph1", layout).find("stride"), std::string::npos);
    EXPECT_NE(reason("mb2ic8ih10oc8kh3ph1", layout).find("not depthwise"), std::string::npos);
  }
  EXPECT_NE(reason("g12mb2ic12ih10oc12kh3ph1", Layout::nhwc).find("16-byte"), std::string::npos);
  EXPECT_EQ(reason("g12mb2ic12ih10oc12kh3ph1", Layout::nhwc, 4), "");  // 3 vectors of 4 fp32
  EXPECT_EQ(reason("g12mb2ic12ih10oc12kh3ph1", Layout::nchw), "");
  EXPECT_NE(reason("g8mb2ic8ih10oc8kh3", Layout::nchw).find("padding"), std::string::npos);
  EXPECT_EQ(reason("g8mb2ic8ih10oc8kh3", Layout::nhwc), "");
}

// The automatic choice on MobileNet-v2's layers on the H200: maps of 14x14 or less the whole-plane
// (nchw) and whole-image (nhwc) kernels; larger ones nhwc the pipelined strips (8.3), nchw the
// strips (8.2) in every dtype.
TEST(DepthwiseStrip, AutomaticChoiceOnMobileNet) {
  for (const Problem& base : mobilenet_dw(32))
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      for (int bytes : {4, 2}) {
        const Im2colGeometry g = geometry(base, layout);
        const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms);
        const std::string what = base.str() + " " + to_string(layout) + " " +
                                 std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
        std::cout << "[ CONFIG   ] " << what << "\n";
        EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
        // Maps of 14x14 or less: the whole-plane and whole-image kernels
        // (tests/test_depthwise_plane.cpp).
        const int want = g.oh <= 14 ? (layout == Layout::nhwc ? 5 : 4)
                         : layout == Layout::nhwc ? 3
                                                  : 2;
        EXPECT_EQ(c.sub_variant, want) << what;
        if (c.sub_variant == 3) {
          EXPECT_EQ(c.pipe.vec * bytes, 16) << what;
          EXPECT_GE(c.pipe.threads, 96) << what;  // 3 warps or more
          EXPECT_GE(c.pipe.blocks, 3 * kH200Sms) << what;
        }
        if (c.sub_variant != 2) continue;
        if (g.w % 8 == 0) {
          EXPECT_EQ(c.strip.load_vec * bytes, 16) << what;  // 16-byte core loads
          EXPECT_EQ(c.strip.pixels, base.sh == 1 ? 8 : 4) << what;
        }
        // Enough threads for the machine, and a band only where the waves allow it.
        EXPECT_GE(c.strip.work, std::int64_t(kH200Sms) * 256) << what;
        if (c.strip.band > 1) {
          const int per_sm = layout == Layout::nhwc
                                 ? kDepthwiseStripNhwcThreads * (bytes == 4 ? 4 : 3)
                                 : kDepthwiseStripNchwThreads * kDepthwiseStripNchwBlocks;
          EXPECT_GE(c.strip.work, std::int64_t(kDepthwiseStripMinWaves) * kH200Sms * per_sm)
              << what;
        }
      }
  // Outside the strips' shapes the staged kernels run; a small 3x3 map without padding, which
  // the nchw strips do not take, the whole-plane kernel.
  for (const char* text : {"g8mb2ic8ih10oc16kh3ph1", "g8mb2ic8ih10oc8kh5ph2"}) {
    const Im2colGeometry g = geometry(parse_problem(text), Layout::nchw);
    EXPECT_EQ(depthwise_config(g, 2, kH200Sms).sub_variant, 1) << text;
  }
  EXPECT_EQ(
      depthwise_config(geometry(parse_problem("g8mb2ic8ih10oc8kh3"), Layout::nchw), 2, kH200Sms)
          .sub_variant,
      4);
}

// ---- configurations -----------------------------------------------------------------------------

std::vector<Problem> all_problems() {
  std::vector<Problem> out = fixed_problems();
  for (const Problem& p : mobilenet_dw(32)) out.push_back(p);
  for (const Problem& p : random_problems(60, 2024)) out.push_back(p);
  return out;
}

// The forced choices the tests run: bands of 1, 2, 3 (one period of the stride-1 rotation) and
// 5 rows, and every nchw strip width for the stride.
std::vector<DepthwiseChoice> forced(const Im2colGeometry& g) {
  std::vector<DepthwiseChoice> out;
  for (int band : {1, 2, 3, 5}) out.push_back(strips(0, band));
  if (!g.nhwc)
    for (const DepthwiseStripShape& shape : kDepthwiseStripNchwShapes)
      if (shape.stride == g.sh) out.push_back(strips(shape.pixels, 2));
  return out;
}

TEST(DepthwiseStrip, ConfigurationsFitTheirProblems) {
  int configs = 0;
  for (const Problem& p : all_problems())
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      for (int bytes : {4, 2}) {
        const Im2colGeometry g = geometry(p, layout);
        if (!depthwise_strip_unsupported_reason(g, bytes).empty()) continue;
        for (int sms : {1, 8, kH200Sms}) {
          std::vector<DepthwiseChoice> choices = forced(g);
          choices.push_back(strips());
          for (const DepthwiseChoice& choice : choices) {
            const DepthwiseConfig c = depthwise_config(g, bytes, sms, choice);
            const std::string what = p.str() + " " + to_string(layout) + " " +
                                     std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
            if (choice.strip_pixels > 0 && c.strip.pixels == 0) continue;  // shape does not fit
            EXPECT_EQ(c.sub_variant, 2) << what;
            EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
            if (choice.strip_band > 0) {
              EXPECT_LE(c.strip.band, choice.strip_band) << what;
            }
            ++configs;
          }
        }
      }
  EXPECT_GT(configs, 1000);
}

TEST(DepthwiseStrip, PipelinedConfigurationsFitTheirProblems) {
  int configs = 0;
  for (const Problem& p : all_problems())
    for (int bytes : {4, 2}) {
      const Im2colGeometry g = geometry(p, Layout::nhwc);
      if (!depthwise_pipe_unsupported_reason(g, bytes).empty()) continue;
      for (int sms : {1, 8, kH200Sms})
        for (int band : {0, 1, 2, 3, 5})
          for (int spb : {0, 1, 3}) {
            const DepthwiseConfig c = depthwise_config(g, bytes, sms, pipe(band, spb));
            const std::string what =
                p.str() + " nhwc " + std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
            EXPECT_EQ(c.sub_variant, 3) << what;
            EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
            EXPECT_LE(c.pipe.copies, kDepthwisePipeMaxCopies) << what;
            ++configs;
          }
    }
  EXPECT_GT(configs, 1000);
  EXPECT_NE(depthwise_pipe_unsupported_reason(
                geometry(parse_problem("g16mb2ic16ih30oc16kh3ph1"), Layout::nchw), 2),
            "");
}

TEST(DepthwiseStrip, MismatchesAreNamed) {
  const Im2colGeometry g = geometry(parse_problem("g16mb2ic16ih30oc16kh3ph1"), Layout::nchw);
  const DepthwiseConfig ok = depthwise_config(g, 2, kH200Sms, strips());
  ASSERT_EQ(depthwise_config_mismatch(g, 2, ok), "");
  DepthwiseConfig c = ok;
  c.strip.band += 1;  // bands no longer cover OH exactly
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
  c = ok;
  c.strip.pixels = 5;  // no such shape
  c.strip.strips = (g.ow + 4) / 5;
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
  c = ok;
  c.strip.work += 1;
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
  c = ok;
  c.grid_x += 1;
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
  c = ok;
  c.sub_variant = 3;
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
  // A problem the strips do not run.
  const Im2colGeometry g2 = geometry(parse_problem("g16mb2ic16ih30oc32kh3ph1"), Layout::nchw);
  EXPECT_NE(depthwise_config_mismatch(g2, 2, ok), "");
}

// ---- CPU emulation of every thread --------------------------------------------------------------

struct Emulation {
  const Im2colGeometry& g;
  const DepthwiseStripConfig& s;
  const HostData& data;
  DataType dt;
  std::vector<float> out;   // problem layout, rounded to dt
  std::vector<int> writes;  // per output element
  std::string error;        // the first access error, "" when none

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
  // A load of n elements at element offset `at` of the input tensor.
  void check_load(std::int64_t at, int n, const char* what) {
    if (at % n != 0) fail(std::string(what) + " load misaligned");
    if (at < 0 || at + n > std::int64_t(data.src.size()))
      fail(std::string(what) + " load outside the input");
  }
  void write(std::int64_t at, int n, const float* v, const char* what) {
    if (at % n != 0) fail(std::string(what) + " store misaligned");
    if (at < 0 || at + n > std::int64_t(out.size())) {
      fail(std::string(what) + " store outside the output");
      return;
    }
    for (int i = 0; i < n; ++i) {
      out[std::size_t(at + i)] = bench::round_to(dt, v[i]);
      ++writes[std::size_t(at + i)];
    }
  }
};

// The kernels' rows for one nchw thread: the loads of NchwRows::fetch (left halo, core vectors
// or element loads past the row's end, right halo), checked, with their values.
template <int S, int P>
struct HostNchwRows {
  using Window = DepthwiseStripNchwWindow<S, P>;
  static constexpr int C = Window::kCols;
  struct Raw {
    float x[C];
  };
  Emulation& e;
  const DepthwiseStripThread& t;
  std::vector<int> fetched;  // per band row

  Raw fetch(int row) {
    const Im2colGeometry& g = e.g;
    if (row < 0 || row >= int(fetched.size()))
      e.fail("fetch of a row outside the band's window");
    else
      ++fetched[std::size_t(row)];
    Raw r{};
    const int iy = depthwise_strip_iy(g, t, 0) + row;
    if (iy < 0 || iy >= g.h) return r;
    const std::int64_t plane = t.image * std::int64_t(g.h) * g.w;
    const int cx = t.ox0 * S, lv = e.s.load_vec;
    auto value = [&](int ix) {
      return e.data.src[std::size_t(plane + std::int64_t(iy) * g.w + ix)];
    };
    if (cx >= 1) {
      e.check_load(plane + std::int64_t(iy) * g.w + cx - 1, 1, "left halo");
      r.x[0] = value(cx - 1);
    }
    if (Window::kRightHalo > 0 && cx + Window::kCore < g.w) {
      e.check_load(plane + std::int64_t(iy) * g.w + cx + Window::kCore, 1, "right halo");
      r.x[C - 1] = value(cx + Window::kCore);
    }
    if (depthwise_strip_core_inside(g, t, Window::kCore)) {
      for (int k = 0; k < Window::kCore; k += lv) {
        e.check_load(plane + std::int64_t(iy) * g.w + cx + k, lv, "core");
        if ((cx + k) % g.w + lv > g.w) e.fail("core vector straddles a row");
        for (int i = 0; i < lv; ++i) r.x[1 + k + i] = value(cx + k + i);
      }
    } else {
      for (int i = 0; i < Window::kCore; ++i)
        if (cx + i < g.w) {
          e.check_load(plane + std::int64_t(iy) * g.w + cx + i, 1, "core element");
          r.x[1 + i] = value(cx + i);
        }
    }
    return r;
  }
  void convert(const Raw& r, float (&x)[C][1]) const {
    for (int j = 0; j < C; ++j) x[j][0] = r.x[j];
  }
  void store(int b, const float (&acc)[P][1]) {
    const Im2colGeometry& g = e.g;
    const int sv = e.s.store_vec;
    const std::int64_t row =
        (t.image * g.oh + t.oy0 + b) * std::int64_t(g.ow) + t.ox0;  // plane == output plane
    for (int q = 0; q < P; q += sv) {
      if (t.ox0 + q + sv <= g.ow) {
        e.write(row + q, sv, &acc[q][0], "vector");
      } else {
        for (int i = 0; i < sv; ++i)
          if (t.ox0 + q + i < g.ow) e.write(row + q + i, 1, &acc[q + i][0], "element");
      }
    }
  }
};

// The kernels' rows for one nhwc thread: one V-channel vector per input pixel of the window.
template <int S, int P, int V>
struct HostNhwcRows {
  static constexpr int C = (P - 1) * S + kDepthwiseStripK;
  struct Raw {
    float x[C][V];
  };
  Emulation& e;
  const DepthwiseStripThread& t;
  std::vector<int> fetched;

  Raw fetch(int row) {
    const Im2colGeometry& g = e.g;
    if (row < 0 || row >= int(fetched.size()))
      e.fail("fetch of a row outside the band's window");
    else
      ++fetched[std::size_t(row)];
    Raw r{};
    const int iy = depthwise_strip_iy(g, t, 0) + row;
    if (iy < 0 || iy >= g.h) return r;
    for (int j = 0; j < C; ++j) {
      const int ix = depthwise_strip_ix(g, t, j);
      if (ix < 0 || ix >= g.w) continue;
      const std::int64_t at = ((t.image * g.h + iy) * std::int64_t(g.w) + ix) * g.c + t.channel;
      e.check_load(at, V, "channel vector");
      for (int i = 0; i < V; ++i) r.x[j][i] = e.data.src[std::size_t(at + i)];
    }
    return r;
  }
  void convert(const Raw& r, float (&x)[C][V]) const {
    for (int j = 0; j < C; ++j)
      for (int i = 0; i < V; ++i) x[j][i] = r.x[j][i];
  }
  void store(int b, const float (&acc)[P][V]) {
    const Im2colGeometry& g = e.g;
    for (int p = 0; p < P; ++p) {
      if (t.ox0 + p >= g.ow) continue;
      const std::int64_t at =
          ((t.image * g.oh + t.oy0 + b) * std::int64_t(g.ow) + t.ox0 + p) * g.oc + t.channel;
      e.write(at, V, acc[p], "channel vector");
    }
  }
};

template <class Rows>
void check_fetched_once(Emulation& e, const Rows& rows, const DepthwiseStripThread& t) {
  for (std::size_t i = 0; i < rows.fetched.size(); ++i)
    if (rows.fetched[i] != 1)
      e.fail("thread at (" + std::to_string(t.image) + ", " + std::to_string(t.oy0) + ", " +
             std::to_string(t.ox0) + "): band row " + std::to_string(i) + " fetched " +
             std::to_string(rows.fetched[i]) + " times");
}

template <int S, int P>
void emulate_nchw_thread(Emulation& e, const DepthwiseStripThread& t) {
  constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;
  float w[kTaps][1];
  for (int tap = 0; tap < kTaps; ++tap)
    w[tap][0] = e.data.wei[std::size_t(t.channel * kTaps + tap)];
  HostNchwRows<S, P> rows{e, t, std::vector<int>(std::size_t((t.rows - 1) * S + 3), 0)};
  depthwise_strip_band<S, P, 1, (kDepthwiseStripK + S - 1) / S>(rows, t.rows, w);
  check_fetched_once(e, rows, t);
}

template <int S, int P, int V>
void emulate_nhwc_thread(Emulation& e, const DepthwiseStripThread& t) {
  constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;
  float w[kTaps][V];
  for (int tap = 0; tap < kTaps; ++tap)
    for (int j = 0; j < V; ++j) w[tap][j] = e.data.wei[std::size_t((t.channel + j) * kTaps + tap)];
  HostNhwcRows<S, P, V> rows{e, t, std::vector<int>(std::size_t((t.rows - 1) * S + 3), 0)};
  depthwise_strip_band<S, P, V, 1>(rows, t.rows, w);
  check_fetched_once(e, rows, t);
}

// The pipelined kernel's rows for one thread: the band rows come from the block's tile, which
// the block's copies fill (depthwise_pipe_copy); `copier` maps each tile vector (col * cvb + cv)
// to the one copy that writes it.
template <int S, int P, int V>
struct HostPipeRows {
  static constexpr int C = (P - 1) * S + kDepthwiseStripK;
  using Raw = int;
  Emulation& e;
  const DepthwisePipeConfig& c;
  const DepthwisePipeBlock& b;
  const DepthwisePipeThread& pt;
  const std::vector<int>& copier;
  std::vector<int> fetched;

  int fetch(int row) {
    if (row < 0 || row >= int(fetched.size()))
      e.fail("fetch of a row outside the band's window");
    else
      ++fetched[std::size_t(row)];
    return row;
  }
  void convert(int row, float (&x)[C][V]) {
    const Im2colGeometry& g = e.g;
    const int iy = depthwise_strip_iy(g, pt.t, 0) + row;
    for (int j = 0; j < C; ++j) {
      const int col = pt.tile_col + j;
      for (int i = 0; i < V; ++i) x[j][i] = 0.0f;
      if (col >= c.tile_cols || copier[std::size_t(col * c.cvb + pt.cv)] < 0) {
        e.fail("window column outside the copied tile");
        continue;
      }
      // The copy's source, as the kernel computes it: tile column col of the block.
      const int ix = b.ix0 + col;
      if (ix != depthwise_strip_ix(g, pt.t, j)) e.fail("tile column is not the window's column");
      if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
      const std::int64_t at = ((std::int64_t(b.n) * g.h + iy) * g.w + ix) * g.c + b.ch0 + pt.cv * V;
      e.check_load(at, V, "cp.async");
      for (int i = 0; i < V; ++i) x[j][i] = e.data.src[std::size_t(at + i)];
    }
  }
  void store(int bb, const float (&acc)[P][V]) {
    if (!pt.stores) return;
    const Im2colGeometry& g = e.g;
    for (int p = 0; p < P; ++p) {
      if (pt.t.ox0 + p >= g.ow) continue;
      const std::int64_t at =
          ((std::int64_t(b.n) * g.oh + b.oy0 + bb) * g.ow + pt.t.ox0 + p) * g.oc + pt.t.channel;
      e.write(at, V, acc[p], "channel vector");
    }
  }
};

template <int S, int P, int V>
void emulate_pipe_block(Emulation& e, const DepthwisePipeConfig& c, int block) {
  const Im2colGeometry& g = e.g;
  const DepthwisePipeBlock b = depthwise_pipe_block(g, c, block);
  // Every tile vector copied by exactly one (thread, copy).
  std::vector<int> copier(std::size_t(c.tile_cols * c.cvb), -1);
  for (int tid = 0; tid < c.threads; ++tid)
    for (int k = 0; k < c.copies; ++k) {
      const DepthwisePipeCopy cp = depthwise_pipe_copy(c, tid, k);
      if (!cp.valid) continue;
      int& who = copier[std::size_t(cp.col * c.cvb + cp.cv)];
      if (who >= 0) e.fail("tile vector copied twice");
      who = tid * kDepthwisePipeMaxCopies + k;
    }
  for (int who : copier)
    if (who < 0) e.fail("tile vector never copied");
  constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;
  for (int tid = 0; tid < c.threads && e.error.empty(); ++tid) {
    const DepthwisePipeThread pt = depthwise_pipe_thread(g, c, b, tid);
    float w[kTaps][V];
    for (int tap = 0; tap < kTaps; ++tap)
      for (int j = 0; j < V; ++j)
        w[tap][j] = e.data.wei[std::size_t((pt.t.channel + j) * kTaps + tap)];
    HostPipeRows<S, P, V> rows{e,  c,      b,
                               pt, copier, std::vector<int>(std::size_t((b.rows - 1) * S + 3), 0)};
    depthwise_strip_band<S, P, V, (kDepthwiseStripK + S - 1) / S>(rows, b.rows, w);
    check_fetched_once(e, rows, pt.t);
  }
}

void emulate_pipe(Emulation& e, const DepthwisePipeConfig& c) {
  for (int block = 0; block < int(c.blocks) && e.error.empty(); ++block) {
    if (c.stride == 1 && c.vec == 4)
      emulate_pipe_block<1, 2, 4>(e, c, block);
    else if (c.stride == 1 && c.vec == 8)
      emulate_pipe_block<1, 1, 8>(e, c, block);
    else if (c.stride == 2 && c.vec == 4)
      emulate_pipe_block<2, 2, 4>(e, c, block);
    else if (c.stride == 2 && c.vec == 8)
      emulate_pipe_block<2, 1, 8>(e, c, block);
    else
      e.fail("no pipelined instantiation for this shape");
  }
}

// Every thread of the grid, through the instantiation the kernels' dispatch picks.
void emulate(Emulation& e) {
  const Im2colGeometry& g = e.g;
  const DepthwiseStripConfig& s = e.s;
  for (int tid = 0; tid < int(s.work) && e.error.empty(); ++tid) {
    const DepthwiseStripThread t = depthwise_strip_thread(g, s, tid);
    if (g.nhwc) {
      const bool v8 = s.load_vec == 8;
      if (s.stride == 1 && s.pixels == 2 && !v8)
        emulate_nhwc_thread<1, 2, 4>(e, t);
      else if (s.stride == 1 && s.pixels == 1 && v8)
        emulate_nhwc_thread<1, 1, 8>(e, t);
      else if (s.stride == 2 && s.pixels == 1 && !v8)
        emulate_nhwc_thread<2, 1, 4>(e, t);
      else if (s.stride == 2 && s.pixels == 1 && v8)
        emulate_nhwc_thread<2, 1, 8>(e, t);
      else
        e.fail("no nhwc instantiation for this shape");
    } else {
      if (s.stride == 1 && s.pixels == 8)
        emulate_nchw_thread<1, 8>(e, t);
      else if (s.stride == 1 && s.pixels == 4)
        emulate_nchw_thread<1, 4>(e, t);
      else if (s.stride == 1 && s.pixels == 7)
        emulate_nchw_thread<1, 7>(e, t);
      else if (s.stride == 2 && s.pixels == 4)
        emulate_nchw_thread<2, 4>(e, t);
      else
        e.fail("no nchw instantiation for this shape");
    }
  }
}

// What every depthwise kernel computes for output (n, oc, oy, ox): fmaf over the taps in (r, s)
// order from 0, padding read as 0, rounded to dt once.
float direct(const Im2colGeometry& g, const HostData& data, DataType dt, int n, int oc, int oy,
             int ox) {
  float acc = 0.0f;
  for (int r = 0; r < g.kh; ++r)
    for (int s = 0; s < g.kw; ++s) {
      const int iy = oy * g.sh - g.ph + r * g.dh, ix = ox * g.sw - g.pw + s * g.dw;
      float x = 0.0f;
      if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
        x = data.src[std::size_t(act_offset(g.nhwc, n, oc / g.ocg, iy, ix, g.c, g.h, g.w))];
      const float w = data.wei[std::size_t((oc * g.kh + r) * g.kw + s)];
      acc = std::fma(x, w, r == 0 && s == 0 ? 0.0f : acc);
    }
  return bench::round_to(dt, acc);
}

std::string check_emulation(const Problem& p, const Emulation& e) {
  if (!e.error.empty()) return e.error;
  const Im2colGeometry& g = e.g;
  for (std::size_t i = 0; i < e.writes.size(); ++i)
    if (e.writes[i] != 1)
      return "output " + std::to_string(i) + " written " + std::to_string(e.writes[i]) + " times";
  for (int n = 0; n < g.n; ++n)
    for (int oc = 0; oc < g.oc; ++oc)
      for (int oy = 0; oy < g.oh; ++oy)
        for (int ox = 0; ox < g.ow; ++ox) {
          const std::size_t at = std::size_t(act_offset(g.nhwc, n, oc, oy, ox, g.oc, g.oh, g.ow));
          const float want = direct(g, e.data, e.dt, n, oc, oy, ox);
          if (std::memcmp(&want, &e.out[at], sizeof(float)) != 0)
            return "output (" + std::to_string(n) + ", " + std::to_string(oc) + ", " +
                   std::to_string(oy) + ", " + std::to_string(ox) + ") is " +
                   std::to_string(e.out[at]) + ", the (r, s) fmaf sum " + std::to_string(want);
        }
  const bench::Correctness r =
      bench::compare(e.out.data(), e.data.ref.data(), e.out.size(),
                     bench::dot_tolerance(p.dtype, p.reduction_length(), e.data.ref_rms));
  return r.passed ? "" : r.message;
}

TEST(DepthwiseStrip, EmulatedKernelsWriteEveryOutputOnceBitExact) {
  std::vector<Problem> problems = fixed_problems();
  for (const Problem& p : random_problems(40, 77)) problems.push_back(p);
  // MobileNet-v2's maps and strides with 8 channels (the thread shapes are those of the full
  // layers; the channel count only repeats them).
  for (Problem p : mobilenet_dw(1)) {
    p.g = p.ic = p.oc = 8;
    problems.push_back(p);
  }
  int cases = 0;
  for (Problem p : problems)
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      for (DataType dt : {DataType::fp32, DataType::bf16}) {
        p.layout = layout;
        p.dtype = dt;
        const int bytes = bench::storage_bytes(dt);
        const Im2colGeometry g = make_im2col_geometry(p);
        if (!depthwise_strip_unsupported_reason(g, bytes).empty()) continue;
        const HostData data = make_host_data(p, 31);
        const bool big = std::int64_t(p.mb) * p.ic * p.ih * p.iw > 50000;  // automatic only
        std::vector<DepthwiseChoice> choices = {strips()};
        if (layout == Layout::nhwc) choices.push_back(pipe());
        if (!big) {
          const std::vector<DepthwiseChoice> f = forced(g);
          choices.insert(choices.end(), f.begin(), f.end());
          if (layout == Layout::nhwc)
            for (int band : {1, 3, 5}) choices.push_back(pipe(band, band == 3 ? 3 : 0));
        }
        for (const DepthwiseChoice& choice : choices) {
          const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms, choice);
          if (choice.strip_pixels > 0 && c.strip.pixels == 0) continue;
          ASSERT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
          Emulation e{g,
                      c.strip,
                      data,
                      dt,
                      std::vector<float>(data.ref.size(), 0.0f),
                      std::vector<int>(data.ref.size(), 0),
                      ""};
          if (c.sub_variant == 3)
            emulate_pipe(e, c.pipe);
          else
            emulate(e);
          EXPECT_EQ(check_emulation(p, e), "") << p.str() << ": " << depthwise_config_name(g, c);
          ++cases;
        }
      }
  EXPECT_GT(cases, 300);
}

// ---- why FP32 products and sums for 16-bit storage ---------------------------------------------

// A 3x3 depthwise layer's outputs three ways, against the float64 reference at the suite's
// tolerance for the dtype: packed 16-bit FMAs (__hfma2: every partial sum rounded to the storage
// type; emulated as the exact fma rounded to float, then to the type), packed 16-bit products
// summed in FP32 (__hmul2, then FP32 adds), and FP32 fmaf of the exact products (the kernels).
// The tolerance's absolute part is the FP32 accumulation's (8 * rms * sqrt(9) * 16 * 2^-24): a
// partial sum rounded to 11 or 8 bits near a small output misses it by orders of magnitude.
TEST(DepthwiseStrip, PackedSixteenBitMathMissesTheTolerance) {
  for (DataType dt : {DataType::fp16, DataType::bf16}) {
    Problem p = parse_problem("g32mb2ic32ih28oc32kh3ph1");
    p.dtype = dt;
    const HostData data = make_host_data(p, 5);
    const Im2colGeometry g = make_im2col_geometry(p);
    std::vector<float> packed_fma, packed_products, fp32(data.ref.size());
    packed_fma = packed_products = fp32;
    for (int n = 0; n < g.n; ++n)
      for (int c = 0; c < g.c; ++c)
        for (int oy = 0; oy < g.oh; ++oy)
          for (int ox = 0; ox < g.ow; ++ox) {
            float a = 0, b = 0;
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                const int iy = oy - 1 + r, ix = ox - 1 + s;
                const float x = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w
                                    ? data.src[std::size_t(((n * g.c + c) * g.h + iy) * g.w + ix)]
                                    : 0.0f;
                const float w = data.wei[std::size_t(c * 9 + r * 3 + s)];
                a = bench::round_to(dt, float(double(x) * w + a));
                b += bench::round_to(dt, x * w);
              }
            const std::size_t at = std::size_t(((n * g.c + c) * g.oh + oy) * g.ow + ox);
            packed_fma[at] = a;
            packed_products[at] = bench::round_to(dt, b);
            fp32[at] = direct(g, data, dt, n, c, oy, ox);
          }
    const bench::Tolerance tol = bench::dot_tolerance(dt, p.reduction_length(), data.ref_rms);
    const bench::Correctness hfma2 =
        bench::compare(packed_fma.data(), data.ref.data(), data.ref.size(), tol);
    const bench::Correctness hmul2 =
        bench::compare(packed_products.data(), data.ref.data(), data.ref.size(), tol);
    const bench::Correctness ffma =
        bench::compare(fp32.data(), data.ref.data(), data.ref.size(), tol);
    std::cout << "[ ERROR    ] " << bench::to_string(dt) << " " << p.str() << ": atol " << tol.atol
              << " rtol " << tol.rtol << "; packed FMA max error " << hfma2.max_abs_err << " ("
              << hfma2.mismatches << " of " << hfma2.elements
              << " outside), packed products + FP32 sum " << hmul2.max_abs_err << " ("
              << hmul2.mismatches << " outside), FP32 fmaf " << ffma.max_abs_err << " ("
              << ffma.mismatches << " outside)\n";
    EXPECT_FALSE(hfma2.passed) << bench::to_string(dt);
    EXPECT_FALSE(hmul2.passed) << bench::to_string(dt);
    EXPECT_TRUE(ffma.passed) << bench::to_string(dt) << ": " << ffma.message;
  }
}

}  // namespace
}  // namespace conv
