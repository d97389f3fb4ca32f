// The depthwise strip kernels (sub-variants 8.2 and 8.3): configuration
// (conv/cuda/depthwise_strip_config.hpp, conv/cuda/depthwise_pipe.hpp) and index math
// (conv/cuda/depthwise_strip.hpp, depthwise_pipe.hpp) on the CPU, in test_depthwise_config's
// binary:
//   - which problems they take and why not, and the automatic choice among 8.1 to 8.5;
//   - every configuration (automatic, forced bands and strip widths) is one the launcher accepts,
//     on fixed, MobileNet-v2 and randomized 3x3 problems, both layouts, 4- and 2-byte storage;
//   - a CPU emulation of every thread, checked access by access and output by output:
//     test_depthwise_strip_emulation.cpp;
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
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_strip.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "tests/conv/depthwise_strip_cases.hpp"

namespace conv {
namespace {

using namespace conv::testing;

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

// The automatic choice on MobileNet-v2's layers on the H200: nchw output maps of 14x14 or less the
// whole-plane kernel (8.4), larger ones the strips (8.2) in every dtype; nhwc output maps of 28x28
// or less the direct kernel (8.6), larger ones the pipelined strips (8.3).
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
        const int want = layout == Layout::nhwc ? (g.oh <= 28 ? 6 : 3) : g.oh <= 14 ? 4 : 2;
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
