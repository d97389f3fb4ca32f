// The small-OC direct convolution (conv/cuda/small_conv_kernels.hpp) against the float64
// reference, and its host-side configuration (conv/cuda/small_conv_config.hpp).
// CPU tests (run everywhere): the configuration's invariants on many geometries, its choices on
// the seed grid, the heuristic, the name, the support answer.
// GPU tests (skip, with the reason, where no GPU is usable): the seed grid and fixed and
// randomized problems (groups, depthwise, stride 2-3, padding, dilation, batch 1..32, OC/G 1..48,
// odd sizes, outputs narrower than a thread's pixels, K large enough for several weight chunks),
// both layouts, fp32/fp16/bf16 storage, the chosen configuration and forced ones (both pixel
// counts, 1..8 splits, one-unit weight chunks, one tap per unit instead of unrolled rows). The
// output is poisoned (NaN) before every run; every result must match the reference and be
// bit-identical across runs and configurations of equal summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "conv/cuda/small_conv_config.hpp"
#include "conv/cuda/small_conv_kernels.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/conv/device_case.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv {
namespace {

constexpr int kH200Sms = 132;

std::vector<Problem> seed_grid() {
  std::vector<Problem> out;
  for (int ih : {32, 64, 128})
    for (int kh : {3, 5, 7})
      out.push_back(parse_problem("mb2ic4ih" + std::to_string(ih) + "oc8kh" + std::to_string(kh)));
  return out;
}

std::vector<Problem> fixed_problems() {
  std::vector<Problem> out = seed_grid();
  for (const char* text : {
           "mb32ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1",     // stride 2, odd OC/G, batch 32
           "g4mb1ic8ih13oc8kh3ph1dh1",                // groups, dilation
           "g8mb2ic8ih10oc8kh3ph1",                   // depthwise: OC/G = 1
           "g32mb2ic32ih14oc32kh3ph1",                // depthwise, 32 groups
           "g2mb2ic16ih9oc96kh3ph1",                  // OC/G = 48: three oc tiles of 16
           "mb2ic4ih19oc8kh3dh1",                     // 3x3 dilated: one tap per unit
           "mb2ic3ih23oc16kh5sh3ph2",                 // stride 3, OC/G = 16
           "mb1ic5ih15iw21oc12kh3kw5",                // non-square kernel, unrolled kw 5
           "mb3ic2ih9iw20oc2kh2kw4pw1",               // even kernel width: one tap per unit
           "mb3ic5ih31oc7kh1",                        // 1x1
           "mb2ic3ih9oc17kh9ph4",                     // kernel 9 (not unrolled), OC/G = 17
           "mb1ic1ih1oc1kh1",                         // one output element
           "mb2ic4ih3iw9oc32kh3kw3",                  // one output row, OC/G = 32: two oc tiles
           "mb1ic4ih7iw6oc4kh7kw7sw2ph3pw3",          // 7x7 at stride 2: one tap per unit
           "mb4ic6ih8iw3oc8kh3kw3ph1pw1",             // OW = 3 < p
           "mb1ic64ih9oc8kh5ph2",                     // K * 8 > 8192 floats: two weight chunks
           "mb1ic96ih7oc32kh3ph1",                    // K * 16 > 8192 floats: two weight chunks
           "g3mb5ic9ih11iw13oc24kh3kw5sw2ph1pw2dh1",  // everything at once
       })
    out.push_back(parse_problem(text));
  return out;
}

std::vector<Problem> test_problems() {
  // Random geometry with OC/G up to 33 (two oc tiles of 16 and a third nearly empty).
  return testing::limited_by_environment(
      testing::randomized_problems(fixed_problems(), fixed_problems().size() + 24, 5150, {8, 33}));
}

// ---- CPU: the configuration -------------------------------------------------------------------

// automatic: c is small_conv_config's own choice (forced splits may leave some splits idle).
void expect_consistent(const Im2colGeometry& g, const SmallConvConfig& c, const std::string& what,
                       bool automatic) {
  EXPECT_EQ(small_conv_config_mismatch(g, c), "") << what;
  EXPECT_GE(c.mt, std::min(g.ocg, kSmallConvMaxMt)) << what;
  EXPECT_LE(c.mt, 2 * g.ocg) << what;  // never more than twice the channels: no wasted half
  EXPECT_GE(c.grid_x * c.px, c.segs) << what;
  EXPECT_GE(std::int64_t(c.segs_per_row) * c.p, g.ow) << what;
  if (automatic) {
    EXPECT_LE(c.splits, c.chunk_units) << what;
  }
  EXPECT_LE(c.smem_bytes, std::size_t(48 * 1024)) << what;
  EXPECT_FALSE(small_conv_config_name(c).empty()) << what;
}

TEST(SmallConvConfig, IsConsistentForEveryProblemAndChoice) {
  std::vector<Problem> problems = test_problems();
  for (const char* text : {"mb256ic3ih224oc8kh7sh2ph3", "mb1ic512ih7oc512kh3ph1",
                           "g512mb1ic512ih56oc512kh3ph1", "mb64ic16ih112oc1kh1"})
    problems.push_back(parse_problem(text));
  for (Problem p : problems)
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      p.layout = layout;
      const Im2colGeometry g = make_im2col_geometry(p);
      ASSERT_TRUE(small_conv_supported(g)) << p.str();
      for (int sms : {1, 8, 132}) {
        expect_consistent(g, small_conv_config(g, sms), p.str() + " sms " + std::to_string(sms),
                          true);
        for (int pixels : {1, small_conv_wide_p(small_conv_mt(g.ocg))})
          for (int splits : {1, 3, 8})
            for (int chunk : {0, 1, 2})
              for (bool unrolled : {true, false}) {
                SmallConvChoice choice;
                choice.p = pixels;
                choice.splits = splits;
                choice.chunk_units = chunk;
                choice.allow_unrolled = unrolled;
                const SmallConvConfig c = small_conv_config(g, sms, choice);
                const std::string what = p.str() + " " + small_conv_config_name(c);
                expect_consistent(g, c, what, false);
                EXPECT_EQ(c.p, pixels) << what;
                EXPECT_EQ(c.splits, splits) << what;
                if (chunk > 0) {
                  EXPECT_EQ(c.chunk_units, std::min(chunk, c.units)) << what;
                }
                if (!unrolled) {
                  EXPECT_EQ(c.kw, 0) << what;
                }
              }
      }
    }
}

TEST(SmallConvConfig, SeedGridOnH200) {
  for (const Problem& p : seed_grid()) {
    const Im2colGeometry g = make_im2col_geometry(p);
    const SmallConvConfig c = small_conv_config(g, kH200Sms);
    const std::string what = p.str() + ": " + small_conv_config_name(c);
    EXPECT_EQ(c.mt, 8) << what;
    EXPECT_EQ(c.kw, g.kw) << what;  // stride 1, dilation 1, kernel 3/5/7: rows unrolled
    EXPECT_EQ(c.units, g.icg * g.kh) << what;
    EXPECT_EQ(c.chunk_units, c.units) << what;  // all weights staged at once
    EXPECT_EQ(c.grid_y, 1) << what;
    std::cout << "[ CONFIG   ] " << what << "\n";
    EXPECT_TRUE(small_conv_preferred(g)) << what;
  }
  // The largest cell gets the wide pixel count, the smallest maps one pixel per thread.
  const Im2colGeometry big = make_im2col_geometry(parse_problem("mb2ic4ih128oc8kh7"));
  EXPECT_EQ(small_conv_config(big, kH200Sms).p, 4);
  EXPECT_EQ(small_conv_config(big, kH200Sms).splits, 8);
  EXPECT_EQ(small_conv_config_name(small_conv_config(big, kH200Sms)),
            "8 oc x 4 px per thread, kw 7 unrolled, split-K 8, block 32x8, grid 237x1, "
            "28 units in 1 chunk");
  for (const char* text : {"mb2ic4ih32oc8kh7", "mb2ic4ih64oc8kh3"}) {
    const Im2colGeometry g = make_im2col_geometry(parse_problem(text));
    EXPECT_EQ(small_conv_config(g, kH200Sms).p, 1) << text;
    EXPECT_EQ(small_conv_config(g, kH200Sms).splits, 8) << text;
  }
  // A large batch needs no split.
  const Im2colGeometry batch = make_im2col_geometry(parse_problem("mb64ic4ih128oc8kh3"));
  EXPECT_EQ(small_conv_config(batch, kH200Sms).p, 4);
  EXPECT_EQ(small_conv_config(batch, kH200Sms).splits, 1);
  EXPECT_EQ(small_conv_config(batch, kH200Sms).px, 128);
}

TEST(SmallConvConfig, TileHeightAndWidePixels) {
  EXPECT_EQ(small_conv_mt(1), 1);
  EXPECT_EQ(small_conv_mt(2), 2);
  EXPECT_EQ(small_conv_mt(3), 4);
  EXPECT_EQ(small_conv_mt(8), 8);
  EXPECT_EQ(small_conv_mt(9), 16);
  EXPECT_EQ(small_conv_mt(16), 16);
  EXPECT_EQ(small_conv_mt(17), 16);
  EXPECT_EQ(small_conv_mt(1000), 16);
  EXPECT_EQ(small_conv_wide_p(1), 4);
  EXPECT_EQ(small_conv_wide_p(8), 4);
  EXPECT_EQ(small_conv_wide_p(16), 2);
}

TEST(SmallConvConfig, SupportAndPreference) {
  // Any OC/G runs (oc tiles), until groups * oc tiles passes grid.y's limit.
  EXPECT_TRUE(small_conv_supported(make_im2col_geometry(parse_problem("mb1ic64ih8oc1024kh3"))));
  Im2colGeometry huge = make_im2col_geometry(parse_problem("mb1ic4ih8oc8kh3"));
  huge.groups = 70000;
  EXPECT_FALSE(small_conv_supported(huge));
  EXPECT_NE(small_conv_unsupported_reason(huge).find("65535"), std::string::npos);

  auto preferred = [](const char* text) {
    return small_conv_preferred(make_im2col_geometry(parse_problem(text)));
  };
  EXPECT_TRUE(preferred("mb2ic4ih128oc8kh7"));          // OC/G 8
  EXPECT_TRUE(preferred("mb32ic64ih56oc16kh3ph1"));     // OC/G 16: half a 32-row tile
  EXPECT_TRUE(preferred("g32mb32ic32ih56oc32kh3ph1"));  // depthwise
  EXPECT_TRUE(preferred("mb32ic32ih56oc32kh3ph1"));     // OC/G 32
  EXPECT_FALSE(preferred("mb32ic64ih56oc64kh3ph1"));    // OC/G 64: variant 3
  EXPECT_FALSE(preferred("mb32ic256ih56oc256kh3ph1"));
  // Short grids above 32 channels stay with variant 3 (and its split-K): res3/res5.
  EXPECT_FALSE(preferred("mb32ic128ih28oc128kh3ph1"));  // 196 tiled blocks
  EXPECT_FALSE(preferred("mb32ic512ih7oc512kh3ph1"));   // 52 tiled blocks
  Im2colGeometry huge_groups = make_im2col_geometry(parse_problem("mb1ic4ih8oc8kh3"));
  huge_groups.groups = 70000;
  EXPECT_FALSE(small_conv_preferred(huge_groups));  // unsupported
}

TEST(SmallConvConfig, MismatchesAreNamed) {
  const Im2colGeometry g = make_im2col_geometry(parse_problem("mb2ic4ih32oc8kh3sh2"));
  SmallConvConfig c = small_conv_config(g, kH200Sms);
  EXPECT_EQ(c.kw, 0);  // stride 2: not unrolled
  c.kw = 3;
  EXPECT_NE(small_conv_config_mismatch(g, c), "");
  c = small_conv_config(g, kH200Sms);
  c.p = 2;
  EXPECT_NE(small_conv_config_mismatch(g, c), "");
  c = small_conv_config(g, kH200Sms);
  c.px = 48;
  EXPECT_NE(small_conv_config_mismatch(g, c), "");
  c = small_conv_config(g, kH200Sms);
  c.smem_bytes = 0;
  EXPECT_NE(small_conv_config_mismatch(g, c), "");
}

// ---- GPU: against the reference ---------------------------------------------------------------

using testing::gpu_unavailable_reason;

// One problem's device buffers in the storage type of its dtype (fp32, fp16 or bf16).
struct DeviceCase : testing::DeviceBuffers {
  using DeviceBuffers::DeviceBuffers;

  // Launches the kernel for the storage type with configuration c, or the automatic one.
  void launch(const SmallConvConfig* c) {
    with_storage_type([&](auto* x, auto* w, auto* y) {
      using T = std::remove_pointer_t<decltype(y)>;
      if (c)
        launch_small_conv<T>(g, *c, x, w, y, stream.get());
      else
        launch_small_conv<T>(g, x, w, y, stream.get());
    });
  }

  // The shared check (testing::DeviceBuffers::check) of one launch with configuration c.
  std::string check(const HostData& data, const SmallConvConfig* c, std::vector<float>* out) {
    return DeviceBuffers::check(
        data, [&](cudaStream_t) { launch(c); }, out);
  }
};

using testing::bit_equal;

TEST(SmallConvCuda, MatchesTheReferenceInEveryConfiguration) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const int sms = small_conv_sm_count();
  int cases = 0;
  for (Problem p : test_problems())
    for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = dt;
        p.layout = layout;
        const HostData data = make_host_data(p, 17);
        DeviceCase dc(p, data);
        const Im2colGeometry& g = dc.g;
        ASSERT_TRUE(small_conv_supported(g)) << p.str();

        // The automatic configuration, twice: bit-identical (deterministic).
        std::vector<float> first, again;
        const SmallConvConfig chosen = small_conv_config(g, sms);
        EXPECT_EQ(dc.check(data, nullptr, &first), "") << p.str() << " " << small_conv_name(g);
        EXPECT_EQ(dc.check(data, nullptr, &again), "") << p.str();
        EXPECT_TRUE(bit_equal(first, again)) << p.str() << ": not deterministic";
        ++cases;

        // Forced configurations: both pixel counts, split counts, small chunks, no unrolling.
        std::vector<SmallConvChoice> choices;
        for (int pixels : {1, small_conv_wide_p(small_conv_mt(g.ocg))})
          for (int splits : {1, 3, 8}) {
            SmallConvChoice c;
            c.p = pixels;
            c.splits = splits;
            choices.push_back(c);
          }
        SmallConvChoice chunked;
        chunked.chunk_units = 1;
        chunked.splits = 2;
        choices.push_back(chunked);
        SmallConvChoice chunked3 = chunked;
        chunked3.chunk_units = 3;
        chunked3.p = 1;
        choices.push_back(chunked3);
        SmallConvChoice taps;
        taps.allow_unrolled = false;
        choices.push_back(taps);
        for (const SmallConvChoice& choice : choices) {
          const SmallConvConfig c = small_conv_config(g, sms, choice);
          std::vector<float> out;
          EXPECT_EQ(dc.check(data, &c, &out), "") << p.str() << " " << small_conv_config_name(c);
          // The summation order depends only on the splits' unit ranges (splits, chunk, unit
          // shape), not on the pixels per thread or the block shape.
          if (c.splits == chosen.splits && c.kw == chosen.kw &&
              c.chunk_units == chosen.chunk_units) {
            EXPECT_TRUE(bit_equal(out, first)) << p.str() << " " << small_conv_config_name(c);
          }
          ++cases;
        }
      }
  EXPECT_GT(cases, 0);
}

TEST(SmallConvCuda, UnwrittenOutputIsCaught) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16}) {
    Problem p = parse_problem("mb2ic4ih9oc8kh3");
    p.dtype = dt;
    const HostData data = make_host_data(p, 3);
    DeviceCase dc(p, data);
    dc.dst.fill_bytes_async(0xFF, dc.stream.get());
    const std::vector<float> out = dc.output();
    const bench::Correctness r =
        bench::compare(out.data(), data.ref.data(), out.size(),
                       bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
    EXPECT_FALSE(r.passed) << bench::to_string(dt);
  }
}

TEST(SmallConvCuda, KernelsDoNotSpill) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  for (const Problem& p : fixed_problems()) {
    const Im2colGeometry g = make_im2col_geometry(p);
    for (int pixels : {1, small_conv_wide_p(small_conv_mt(g.ocg))}) {
      SmallConvChoice choice;
      choice.p = pixels;
      const SmallConvConfig c = small_conv_config(g, kH200Sms, choice);
      for (const std::string& res :
           {small_conv_kernel_resources<float>(c), small_conv_kernel_resources<__half>(c),
            small_conv_kernel_resources<__nv_bfloat16>(c)})
        EXPECT_NE(res.find(" 0 B local"), std::string::npos)
            << small_conv_config_name(c) << ": " << res;
    }
  }
}

}  // namespace
}  // namespace conv
