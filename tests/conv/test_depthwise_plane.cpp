// The nchw whole-plane depthwise kernel (sub-variant 8.4): configuration
// (conv/cuda/depthwise_plane.hpp) and index math on the CPU, in test_depthwise_config's binary:
//   - which problems it takes and why not; every configuration (automatic, forced planes per
//     block, 1 to 132 SMs) is one the launcher accepts, with every block's runs 16-byte aligned;
//   - a CPU emulation of every block, as the kernel runs it (conv/cuda/depthwise_plane_kernels.cu):
//     the copy of the block's input run into shared memory (16-byte vectors aligned in the
//     tensor, then the run's last elements one at a time: each element copied exactly once), each
//     item's outputs through the kernel's own depthwise_plane_outputs reading only copied
//     elements of its own plane, the shared output run written once per element and copied out
//     the same way; every output written exactly once and bit-identical to the taps summed in
//     (r, s) order with fmaf (what every depthwise kernel computes), within the float64
//     reference's tolerance;
//   - the nhwc whole-image kernel (8.5, conv/cuda/depthwise_image.hpp) the same way: its
//     configurations, and every block emulated (each shared element copied once from an aligned
//     16-byte vector, each output word written once, bit-identical).
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
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_image.hpp"
#include "conv/cuda/depthwise_plane.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "tests/conv/depthwise_nhwc_check.hpp"

namespace conv {
namespace {
// This file's helpers (problem sets, emulation) share names with the strip tests'
// (tests/conv/depthwise_strip_cases.hpp, test_depthwise_strip_emulation.cpp) but not their
// contents: a namespace of their own keeps them apart where one translation unit holds both (a
// unity build, -DMYCONV_UNITY=ON).
namespace plane_test {

constexpr int kH200Sms = 132;
constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;

Im2colGeometry nchw(Problem p) {
  p.layout = Layout::nchw;
  return make_im2col_geometry(p);
}

// MobileNet-v2's depthwise layers with an output map of 14x14 or less, batch mb.
std::vector<Problem> small_map_layers(int mb) {
  std::vector<Problem> out;
  for (const char* t : {"g192mb32ic192ih28oc192kh3sh2ph1", "g384mb32ic384ih14oc384kh3ph1",
                        "g576mb32ic576ih14oc576kh3ph1", "g576mb32ic576ih14oc576kh3sh2ph1",
                        "g960mb32ic960ih7oc960kh3ph1"}) {
    Problem p = parse_problem(t);
    p.mb = mb;
    out.push_back(p);
  }
  return out;
}

// Edges: odd sizes, one pixel, padding 0 and 2, widths that take P = 8 with a partial strip,
// channel counts that leave the last block short of planes and a run off the 16-byte grid.
std::vector<Problem> edge_problems() {
  std::vector<Problem> out;
  for (const char* t :
       {"g8mb2ic8ih10oc8kh3ph1", "g16mb1ic16ih9oc16kh3sh2ph1", "g5mb1ic5ih13iw17oc5kh3kw3ph1pw1",
        "g3mb3ic3ih15iw9oc3kh3kw3sh2sw2ph1pw1", "g8mb1ic8ih1iw1oc8kh3kw3ph1pw1",
        "g7mb1ic7ih12oc7kh3", "g9mb1ic9ih12oc9kh3ph2", "g11mb3ic11ih7oc11kh3ph1",
        "g13mb2ic13ih14oc13kh3sh2ph1", "g12mb2ic12ih6iw16oc12kh3kw3ph1pw1"}) {
    Problem p = parse_problem(t);
    p.oc = p.g;
    out.push_back(p);
  }
  std::mt19937 rng(404);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < 40) {
    Problem p;
    p.g = p.ic = p.oc = pick(1, 40);
    p.mb = pick(1, 3);
    p.ih = pick(1, 30);
    p.iw = pick(1, 30);
    p.kh = p.kw = 3;
    p.sh = p.sw = pick(1, 2);
    p.ph = pick(0, 2);
    p.pw = pick(0, 2);
    if (p.validate().empty() && p.unsupported_reason().empty()) out.push_back(p);
  }
  return out;
}

DepthwiseChoice planes(int most = 0) {
  DepthwiseChoice c;
  c.sub_variant = 4;
  c.plane_planes = most;
  return c;
}

TEST(DepthwisePlane, SupportAnswersSayWhy) {
  Problem p = parse_problem("g16mb2ic16ih14oc16kh3ph1");
  EXPECT_EQ(depthwise_plane_unsupported_reason(nchw(p), 2), "");
  p.layout = Layout::nhwc;
  EXPECT_NE(depthwise_plane_unsupported_reason(make_im2col_geometry(p), 2), "");
  for (const char* t :
       {"g16mb2ic16ih14oc32kh3ph1", "g16mb2ic16ih14oc16kh5ph2", "g16mb2ic16ih14oc16kh3sh3ph1"})
    EXPECT_NE(depthwise_plane_unsupported_reason(nchw(parse_problem(t)), 2), "") << t;
  // One aligned run of 112x112 fp32 planes needs 2 x 49 KB.
  EXPECT_NE(depthwise_plane_unsupported_reason(nchw(parse_problem("g16mb1ic16ih112oc16kh3ph1")), 4),
            "");
}

TEST(DepthwisePlane, AutomaticChoiceTakesItForSmallNchwMaps) {
  for (const Problem& p : small_map_layers(32))
    for (int bytes : {4, 2}) {
      const Im2colGeometry g = nchw(p);
      const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms);
      const std::string what =
          p.str() + " " + std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
      std::cout << "[ CONFIG   ] " << what << "\n";
      EXPECT_EQ(c.sub_variant, 4) << what;
      EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
      EXPECT_EQ(c.plane.pixels, 7) << what;
      EXPECT_GE(c.plane.blocks, 2 * kH200Sms) << what;
      EXPECT_GE(c.plane.threads, 128) << what;
      EXPECT_LE(c.plane.smem_bytes, kDepthwisePlaneMaxSmemBytes) << what;
    }
}

TEST(DepthwisePlane, ConfigurationsFitTheirProblems) {
  int configs = 0;
  std::vector<Problem> problems = edge_problems();
  for (const Problem& p : small_map_layers(32)) problems.push_back(p);
  for (const Problem& p : problems)
    for (int bytes : {4, 2}) {
      const Im2colGeometry g = nchw(p);
      if (!depthwise_plane_unsupported_reason(g, bytes).empty()) continue;
      for (int sms : {1, 8, kH200Sms})
        for (int most : {0, 1, 3, 8, 1000}) {
          const DepthwiseConfig c = depthwise_config(g, bytes, sms, planes(most));
          const std::string what =
              p.str() + " " + std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
          EXPECT_EQ(c.sub_variant, 4) << what;
          EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
          EXPECT_EQ(std::int64_t(c.plane.planes) * g.h * g.w * bytes % 16, 0) << what;
          EXPECT_EQ(std::int64_t(c.plane.planes) * g.oh * g.ow * bytes % 16, 0) << what;
          EXPECT_GE(std::int64_t(c.plane.threads) * kDepthwisePlaneItemsPerThread,
                    std::min<std::int64_t>(kDepthwisePlaneMaxThreads * 2,
                                           std::int64_t(c.plane.planes) * g.oh * c.plane.strips))
              << what;
          ++configs;
        }
    }
  EXPECT_GT(configs, 300);
  // A configuration for another problem, or with its sizes changed, is named.
  const Im2colGeometry g = nchw(parse_problem("g64mb2ic64ih14oc64kh3ph1"));
  DepthwiseConfig c = depthwise_config(g, 2, kH200Sms, planes());
  c.plane.threads += 32;
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
  c = depthwise_config(g, 2, kH200Sms, planes());
  c.plane.planes += 1;
  EXPECT_NE(depthwise_config_mismatch(g, 2, c), "");
}

// ---- CPU emulation of every block ---------------------------------------------------------------

struct Emulation {
  const Im2colGeometry& g;
  const DepthwisePlaneConfig& c;
  const HostData& data;
  DataType dt;
  std::vector<float> out;   // nchw, rounded to dt
  std::vector<int> writes;  // per output element
  std::string error;

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
};

// copy_run of the kernel, for `threads` threads: vectors of `v` elements, batches, the tail;
// calls move(from, to, n) per access and fails unless every element of [0, n) moves once.
template <class Move>
void emulate_copy(Emulation& e, int n, int v, int threads, Move move) {
  std::vector<int> moved(std::size_t(n), 0);
  const int vectors = n / v;
  for (int base = 0; base < vectors; base += kDepthwisePlaneCopyBatch * threads)
    for (int k = 0; k < kDepthwisePlaneCopyBatch; ++k)
      for (int tid = 0; tid < threads; ++tid) {
        const int i = base + k * threads + tid;
        if (i >= vectors) continue;
        move(i * v, v);
        for (int j = 0; j < v; ++j) ++moved[std::size_t(i * v + j)];
      }
  for (int tid = 0; tid < threads; ++tid)
    for (int el = vectors * v + tid; el < n; el += threads) {
      move(el, 1);
      ++moved[std::size_t(el)];
    }
  for (int m : moved)
    if (m != 1) e.fail("a run element copied " + std::to_string(m) + " times");
}

template <int S, int P>
void emulate_block(Emulation& e, int block, int bytes) {
  const Im2colGeometry& g = e.g;
  const DepthwisePlaneConfig& c = e.c;
  const DepthwisePlaneBlock b = depthwise_plane_block(g, c, block);
  const std::int64_t hw = std::int64_t(g.h) * g.w, ohw = std::int64_t(g.oh) * g.ow;
  const int v = 16 / bytes;
  if (b.planes < 1 || b.planes > c.planes) e.fail("block with no planes or too many");
  // Copy in: 16-byte vectors aligned in the tensor (and in shared memory), inside the tensor.
  std::vector<float> in(std::size_t(c.in_elems), NAN);
  std::vector<bool> have(std::size_t(c.in_elems), false);
  emulate_copy(e, int(b.planes * hw), v, c.threads, [&](int at, int n) {
    const std::int64_t src = b.plane0 * hw + at;
    if (n > 1 && src % n != 0) e.fail("input vector misaligned");
    if (src < 0 || src + n > std::int64_t(e.data.src.size()) || at + n > c.in_elems) {
      e.fail("input copy outside the tensor or the run");
      return;
    }
    for (int j = 0; j < n; ++j) {
      in[std::size_t(at + j)] = e.data.src[std::size_t(src + j)];
      have[std::size_t(at + j)] = true;
    }
  });
  // Items, as the kernel's loop over them.
  std::vector<float> out(std::size_t(c.out_elems), NAN);
  std::vector<int> out_writes(std::size_t(c.out_elems), 0);
  const int items = b.planes * g.oh * c.strips;
  for (int item = 0; item < items && e.error.empty(); ++item) {
    const DepthwisePlaneItem it = depthwise_plane_item(g, c, item);
    const int channel = int((b.plane0 + it.plane) % g.c);
    float w[kTaps];
    for (int t = 0; t < kTaps; ++t) w[t] = e.data.wei[std::size_t(channel * kTaps + t)];
    auto read = [&](int iy, int ix) {
      if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) e.fail("read outside the plane");
      const std::size_t at = std::size_t(it.plane * hw + std::int64_t(iy) * g.w + ix);
      if (at >= have.size() || !have[at]) {
        e.fail("read of an element not copied in");
        return 0.0f;
      }
      return in[at];
    };
    float acc[P];
    depthwise_plane_outputs<S, P>(g, read, it.oy, it.ox0, w, acc);
    for (int p = 0; p < P; ++p) {
      if (it.ox0 + p >= g.ow) continue;
      const std::size_t at = std::size_t(it.plane * ohw + std::int64_t(it.oy) * g.ow + it.ox0 + p);
      out[at] = bench::round_to(e.dt, acc[p]);
      ++out_writes[at];
    }
  }
  for (std::int64_t i = 0; i < b.planes * ohw; ++i)
    if (out_writes[std::size_t(i)] != 1) e.fail("a shared output written other than once");
  // Copy out.
  emulate_copy(e, int(b.planes * ohw), v, c.threads, [&](int at, int n) {
    const std::int64_t dst = b.plane0 * ohw + at;
    if (n > 1 && dst % n != 0) e.fail("output vector misaligned");
    if (dst < 0 || dst + n > std::int64_t(e.out.size())) {
      e.fail("output copy outside the tensor");
      return;
    }
    for (int j = 0; j < n; ++j) {
      e.out[std::size_t(dst + j)] = out[std::size_t(at + j)];
      ++e.writes[std::size_t(dst + j)];
    }
  });
}

void emulate(Emulation& e, int bytes) {
  for (int block = 0; block < int(e.c.blocks) && e.error.empty(); ++block) {
    if (e.c.stride == 1 && e.c.pixels == 7)
      emulate_block<1, 7>(e, block, bytes);
    else if (e.c.stride == 1 && e.c.pixels == 8)
      emulate_block<1, 8>(e, block, bytes);
    else if (e.c.stride == 2 && e.c.pixels == 7)
      emulate_block<2, 7>(e, block, bytes);
    else if (e.c.stride == 2 && e.c.pixels == 8)
      emulate_block<2, 8>(e, block, bytes);
    else
      e.fail("no instantiation for this shape");
  }
}

// What every depthwise kernel computes for output (n, c, oy, ox): fmaf over the taps in (r, s)
// order from 0, padding read as 0, rounded to dt once.
float direct(const Im2colGeometry& g, const HostData& data, DataType dt, int n, int ch, int oy,
             int ox) {
  float acc = 0.0f;
  for (int r = 0; r < g.kh; ++r)
    for (int s = 0; s < g.kw; ++s) {
      const int iy = oy * g.sh - g.ph + r, ix = ox * g.sw - g.pw + s;
      float x = 0.0f;
      if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
        x = data.src[std::size_t(((std::int64_t(n) * g.c + ch) * g.h + iy) * g.w + ix)];
      acc = std::fma(x, data.wei[std::size_t((ch * g.kh + r) * g.kw + s)],
                     r == 0 && s == 0 ? 0.0f : acc);
    }
  return bench::round_to(dt, acc);
}

std::string check(const Problem& p, const Emulation& e) {
  if (!e.error.empty()) return e.error;
  const Im2colGeometry& g = e.g;
  for (std::size_t i = 0; i < e.writes.size(); ++i)
    if (e.writes[i] != 1)
      return "output " + std::to_string(i) + " written " + std::to_string(e.writes[i]) + " times";
  for (int n = 0; n < g.n; ++n)
    for (int ch = 0; ch < g.c; ++ch)
      for (int oy = 0; oy < g.oh; ++oy)
        for (int ox = 0; ox < g.ow; ++ox) {
          const std::size_t at =
              std::size_t(((std::int64_t(n) * g.c + ch) * g.oh + oy) * g.ow + ox);
          const float want = direct(g, e.data, e.dt, n, ch, oy, ox);
          if (std::memcmp(&want, &e.out[at], sizeof(float)) != 0)
            return "output (" + std::to_string(n) + ", " + std::to_string(ch) + ", " +
                   std::to_string(oy) + ", " + std::to_string(ox) + ") is " +
                   std::to_string(e.out[at]) + ", the (r, s) fmaf sum " + std::to_string(want);
        }
  const bench::Correctness r =
      bench::compare(e.out.data(), e.data.ref.data(), e.out.size(),
                     bench::dot_tolerance(p.dtype, p.reduction_length(), e.data.ref_rms));
  return r.passed ? "" : r.message;
}

// check() for an nhwc output.
std::string check_nhwc(const Problem& p, const Emulation& e) {
  if (!e.error.empty()) return e.error;
  return testing::check_nhwc_3x3(p, e.g, e.data, e.dt, e.out, e.writes);
}

TEST(DepthwisePlane, EmulatedKernelWritesEveryOutputOnceBitExact) {
  std::vector<Problem> problems = edge_problems();
  // MobileNet-v2's small maps with 24 channels at batch 1 (the block shapes are those of the
  // full layers where 24 planes allow; the count only repeats them).
  for (Problem p : small_map_layers(1)) {
    p.g = p.ic = p.oc = 24;
    problems.push_back(p);
  }
  int cases = 0;
  for (Problem p : problems)
    for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16}) {
      p.layout = Layout::nchw;
      p.dtype = dt;
      const int bytes = bench::storage_bytes(dt);
      const Im2colGeometry g = make_im2col_geometry(p);
      if (!depthwise_plane_unsupported_reason(g, bytes).empty()) continue;
      const HostData data = make_host_data(p, 41);
      for (int most : {0, 1, 3}) {
        const DepthwiseConfig c = depthwise_config(g, bytes, 2, planes(most));
        ASSERT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
        Emulation e{g,
                    c.plane,
                    data,
                    dt,
                    std::vector<float>(data.ref.size(), 0.0f),
                    std::vector<int>(data.ref.size(), 0),
                    ""};
        emulate(e, bytes);
        EXPECT_EQ(check(p, e), "") << p.str() << ": " << depthwise_config_name(g, c);
        ++cases;
      }
    }
  EXPECT_GT(cases, 100);
}

// The emulation catches what it should: a wrong item order (two strips' columns swapped) writes
// some outputs twice and others never.
TEST(DepthwisePlane, EmulationCatchesAWrongItemMap) {
  Problem p = parse_problem("g8mb1ic8ih14iw16oc8kh3kw3ph1pw1");
  p.dtype = DataType::fp32;
  const Im2colGeometry g = make_im2col_geometry(p);
  const HostData data = make_host_data(p, 3);
  DepthwiseConfig c = depthwise_config(g, 4, 2, planes());
  ASSERT_EQ(c.plane.strips, 2);
  c.plane.pixels = 7;  // strips of 7 over 16 columns: columns 14 and 15 never written
  Emulation e{g,
              c.plane,
              data,
              DataType::fp32,
              std::vector<float>(data.ref.size(), 0.0f),
              std::vector<int>(data.ref.size(), 0),
              ""};
  emulate(e, 4);
  EXPECT_NE(check(p, e), "");
}

// ---- 8.5: nhwc whole images
// ----------------------------------------------------------------------

DepthwiseChoice images(int most_words = 0) {
  DepthwiseChoice c;
  c.sub_variant = 5;
  c.image_words = most_words;
  return c;
}

Im2colGeometry nhwc(Problem p) {
  p.layout = Layout::nhwc;
  return make_im2col_geometry(p);
}

TEST(DepthwiseImage, SupportAndConfigurations) {
  EXPECT_EQ(depthwise_image_unsupported_reason(nhwc(parse_problem("g16mb2ic16ih14oc16kh3ph1")), 2),
            "");
  EXPECT_NE(depthwise_image_unsupported_reason(nchw(parse_problem("g16mb2ic16ih14oc16kh3ph1")), 2),
            "");
  EXPECT_NE(depthwise_image_unsupported_reason(nhwc(parse_problem("g12mb2ic12ih14oc12kh3ph1")), 2),
            "");  // 12 fp16 channels: not whole 16-byte vectors
  EXPECT_NE(depthwise_image_unsupported_reason(nhwc(parse_problem("g16mb2ic16ih56oc16kh3ph1")), 2),
            "");  // 56x56 x 16 bytes: 49 KB
  int configs = 0;
  for (const Problem& p : small_map_layers(32))
    for (int bytes : {4, 2}) {
      const Im2colGeometry g = nhwc(p);
      const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms, images());
      const std::string what =
          p.str() + " nhwc " + std::to_string(bytes) + " B: " + depthwise_config_name(g, c);
      std::cout << "[ CONFIG   ] " << what << "\n";
      EXPECT_EQ(c.sub_variant, 5) << what;
      EXPECT_EQ(depthwise_config_mismatch(g, bytes, c), "") << what;
      EXPECT_GE(c.image.blocks, 4 * kH200Sms) << what;
      for (int most : {0, 4, 8, 16, 32})
        for (int sms : {1, 132}) {
          const DepthwiseConfig f = depthwise_config(g, bytes, sms, images(most));
          EXPECT_EQ(depthwise_config_mismatch(g, bytes, f), "") << what;
          ++configs;
        }
    }
  EXPECT_GT(configs, 90);
}

template <int S, int P, int E>
void emulate_image_block(Emulation& e, const DepthwiseImageConfig& c, int block, int bytes) {
  const Im2colGeometry& g = e.g;
  const DepthwiseImageBlock b = depthwise_image_block(c, block);
  const int cpb = c.cw * E;  // channels per block
  const int vpp = c.cw / 4, v = 16 / bytes;
  // Copy in, as the kernel's loop: vector i is pixel i / vpp, vector i % vpp of its slice.
  std::vector<float> smem(std::size_t(g.h) * g.w * cpb, NAN);
  std::vector<int> copied(smem.size(), 0);
  for (int i = 0; i < g.h * g.w * vpp; ++i) {
    const int pix = i / vpp, q = i % vpp;
    const std::int64_t src = (std::int64_t(b.n) * g.h * g.w + pix) * g.c + b.ch0 + q * v;
    if (src % v != 0) e.fail("input vector misaligned");
    if (src < 0 || src + v > std::int64_t(e.data.src.size())) {
      e.fail("input vector outside the tensor");
      continue;
    }
    for (int j = 0; j < v; ++j) {
      smem[std::size_t(i * v + j)] = e.data.src[std::size_t(src + j)];
      ++copied[std::size_t(i * v + j)];
    }
  }
  for (int k : copied)
    if (k != 1) e.fail("a shared element copied other than once");
  for (int tid = 0; tid < c.threads && e.error.empty(); ++tid) {
    const int word = tid % c.cw, line = tid / c.cw;
    const int ch = b.ch0 + word * E;
    float w[kTaps][E];
    for (int t = 0; t < kTaps; ++t)
      for (int j = 0; j < E; ++j) w[t][j] = e.data.wei[std::size_t((ch + j) * kTaps + t)];
    auto in = [&](int iy, int ix, float(&x)[E]) {
      if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) e.fail("read outside the image");
      for (int j = 0; j < E; ++j) x[j] = smem[std::size_t((iy * g.w + ix) * cpb + word * E + j)];
    };
    for (int item = line; item < g.oh * c.strips; item += c.lines) {
      const int oy = item / c.strips, ox0 = (item % c.strips) * P;
      float acc[P][E];
      depthwise_image_outputs<S, P, E>(g, in, oy, ox0, w, acc);
      for (int p = 0; p < P; ++p) {
        if (ox0 + p >= g.ow) continue;
        const std::int64_t at = ((std::int64_t(b.n) * g.oh + oy) * g.ow + ox0 + p) * g.c + ch;
        if (at % E != 0 || at < 0 || at + E > std::int64_t(e.out.size())) {
          e.fail("output word misaligned or outside");
          continue;
        }
        for (int j = 0; j < E; ++j) {
          e.out[std::size_t(at + j)] = bench::round_to(e.dt, acc[p][j]);
          ++e.writes[std::size_t(at + j)];
        }
      }
    }
  }
}

template <int E>
void emulate_image(Emulation& e, const DepthwiseImageConfig& c, int bytes) {
  for (int block = 0; block < int(c.blocks) && e.error.empty(); ++block) {
    if (c.stride == 1 && c.pixels == 7)
      emulate_image_block<1, 7, E>(e, c, block, bytes);
    else if (c.stride == 1 && c.pixels == 8)
      emulate_image_block<1, 8, E>(e, c, block, bytes);
    else if (c.stride == 2 && c.pixels == 7)
      emulate_image_block<2, 7, E>(e, c, block, bytes);
    else if (c.stride == 2 && c.pixels == 8)
      emulate_image_block<2, 8, E>(e, c, block, bytes);
    else
      e.fail("no instantiation for this shape");
  }
}

TEST(DepthwiseImage, EmulatedKernelWritesEveryOutputOnceBitExact) {
  std::vector<Problem> problems;
  for (const char* t :
       {"g16mb2ic16ih10oc16kh3ph1", "g32mb1ic32ih9oc32kh3sh2ph1", "g8mb1ic8ih13iw17oc8kh3kw3ph1pw1",
        "g24mb3ic24ih15iw9oc24kh3kw3sh2sw2ph1pw1", "g16mb1ic16ih1iw1oc16kh3kw3ph1pw1",
        "g64mb1ic64ih12oc64kh3", "g8mb2ic8ih12oc8kh3ph2", "g48mb2ic48ih7oc48kh3ph1",
        "g40mb1ic40ih14oc40kh3sh2ph1", "g128mb1ic128ih14oc128kh3ph1"})
    problems.push_back(parse_problem(t));
  for (Problem p : small_map_layers(1)) {
    p.g = p.ic = p.oc = 64;
    problems.push_back(p);
  }
  int cases = 0;
  for (Problem p : problems)
    for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16}) {
      p.layout = Layout::nhwc;
      p.dtype = dt;
      const int bytes = bench::storage_bytes(dt);
      const Im2colGeometry g = make_im2col_geometry(p);
      if (!depthwise_image_unsupported_reason(g, bytes).empty()) continue;
      const HostData data = make_host_data(p, 43);
      for (int most : {0, 4, 8}) {
        const DepthwiseConfig c = depthwise_config(g, bytes, 2, images(most));
        ASSERT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
        DepthwisePlaneConfig unused;
        Emulation e{g,
                    unused,
                    data,
                    dt,
                    std::vector<float>(data.ref.size(), 0.0f),
                    std::vector<int>(data.ref.size(), 0),
                    ""};
        if (bytes == 4)
          emulate_image<1>(e, c.image, bytes);
        else
          emulate_image<2>(e, c.image, bytes);
        EXPECT_EQ(check_nhwc(p, e), "") << p.str() << ": " << depthwise_config_name(g, c);
        ++cases;
      }
    }
  EXPECT_GT(cases, 60);
}

}  // namespace plane_test
}  // namespace
}  // namespace conv
