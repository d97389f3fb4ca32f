// The variant setting and the heuristic of im2col_gemm_cuda (conv/cuda/variant_choice.hpp), on
// the CPU: which variant each kind of problem gets on a Hopper, an Ampere-class GPU and one
// without our tensor-core kernels, and that the reason is stated; variant 11's GEMM mapping and
// what it takes (conv/cuda/gemm_1x1_config.hpp); variant 12 searched in fp32 and its rule (its
// own host side: test_winograd_config.cpp); the small-OC range and variant 10's part slices as
// the search run over the model grids measured them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "conv/cuda/gemm_1x1_config.hpp"
#include "conv/cuda/plan_override.hpp"
#include "conv/cuda/variant_choice.hpp"
#include "conv/cuda/winograd_config.hpp"
#include "core/error.hpp"
#include "tests/conv/typed_problem.hpp"

namespace conv {
namespace {

using testing::typed_problem;

constexpr VariantDevice kHopper{true, true, true};
// Rules 2-6 on a Hopper for the 1x1 problems variant 11 would take: as on a build without the
// GEMM engine (its device question failing alone).
constexpr VariantDevice kHopperNoEngine{true, true, false};
constexpr VariantDevice kAmpere{true, false};
constexpr VariantDevice kNoTensorCores{false, false};

TEST(VariantChoice, SettingsParseAndBadOnesAreUsageErrors) {
  EXPECT_EQ(parse_variant_setting("").mode, VariantSetting::Mode::automatic);
  EXPECT_EQ(parse_variant_setting("auto").mode, VariantSetting::Mode::automatic);
  EXPECT_EQ(parse_variant_setting("search").mode, VariantSetting::Mode::search);
  for (int n = 1; n <= 13; ++n) {
    const VariantSetting s = parse_variant_setting(std::to_string(n));
    EXPECT_EQ(s.mode, VariantSetting::Mode::fixed);
    EXPECT_EQ(int(s.variant), n);
    EXPECT_EQ(std::string(variant_name(s.variant)).rfind("v" + std::to_string(n) + " ", 0), 0u);
  }
  for (int sub : {1, 2, 3, 4, 5, 6}) {
    const VariantSetting s = parse_variant_setting("8." + std::to_string(sub));
    EXPECT_EQ(s.mode, VariantSetting::Mode::fixed);
    EXPECT_EQ(s.variant, Variant::depthwise);
    EXPECT_EQ(s.sub, sub);
  }
  EXPECT_EQ(parse_variant_setting("8").sub, 0);
  for (int sub : {1, 2}) {
    const VariantSetting s = parse_variant_setting("12." + std::to_string(sub));
    EXPECT_EQ(s.mode, VariantSetting::Mode::fixed);
    EXPECT_EQ(s.variant, Variant::winograd);
    EXPECT_EQ(s.sub, sub);
  }
  EXPECT_EQ(parse_variant_setting("12").sub, 0);
  for (const char* bad : {"12.0", "12.3", "12.", "11.1"})
    EXPECT_THROW(parse_variant_setting(bad), bench::UsageError) << bad;
  for (const char* bad : {"0", "14", "x", "auto ", "01", "8.0", "8.7", "7.1", "8.", "011", "13.1"})
    EXPECT_THROW(parse_variant_setting(bad), bench::UsageError) << bad;
}

TEST(VariantChoice, HopperTakesWgmmaWhereItRuns) {
  const VariantChoice res2 =
      choose_variant(typed_problem("mb32ic64ih56oc64kh3ph1", DataType::fp16), kHopper);
  EXPECT_EQ(res2.variant, Variant::wgmma_implicit_gemm);
  EXPECT_NE(res2.why.find("Hopper"), std::string::npos);
  EXPECT_EQ(choose_variant(typed_problem("mb32ic512ih7oc512kh3ph1", DataType::bf16, Layout::nhwc),
                           kHopper)
                .variant,
            Variant::wgmma_implicit_gemm);
  // tf32: 64 channels are two 128-byte slices, so even the 1x1 layer pipelines.
  EXPECT_EQ(choose_variant(typed_problem("mb32ic64ih56oc256kh1", DataType::tf32), kHopper).variant,
            Variant::wgmma_implicit_gemm);
  // fp16 1x1 with 64 channels: one slice.
  const VariantChoice one =
      choose_variant(typed_problem("mb32ic64ih56oc256kh1", DataType::fp16), kHopperNoEngine);
  EXPECT_EQ(one.variant, Variant::mma_repacked_implicit_gemm);
  EXPECT_NE(one.why.find("one k slice"), std::string::npos);
  // conv1: 3 channels are not a whole slice.
  const VariantChoice conv1 =
      choose_variant(typed_problem("mb32ic3ih224oc64kh7sh2ph3", DataType::fp16), kHopper);
  EXPECT_EQ(conv1.variant, Variant::mma_repacked_implicit_gemm);
  EXPECT_NE(conv1.why.find("not variant 10"), std::string::npos);
  // Groups.
  EXPECT_EQ(
      choose_variant(typed_problem("g2mb2ic128ih14oc128kh3ph1", DataType::fp16), kHopper).variant,
      Variant::mma_repacked_implicit_gemm);
  // Channels that are not whole slices: the last one zero-filled, where they fill over half of
  // the tap's slices on a filter wider than 1x1 (Inception-v3's 160 and 80 fp16 channels: 3 and 2
  // slices).
  for (Layout layout : {Layout::nchw, Layout::nhwc})
    for (const char* text : {"mb32ic160ih17iw17oc192kh7kw1ph3", "mb32ic80ih73oc192kh3"}) {
      const VariantChoice c = choose_variant(typed_problem(text, DataType::fp16, layout), kHopper);
      EXPECT_EQ(c.variant, Variant::wgmma_implicit_gemm) << text;
      EXPECT_NE(c.why.find("k slices per tap"), std::string::npos) << c.why;
    }
  // 24 fp16 channels fill 24 of a slice's 64; 1x1 filters with part slices (96 channels in two)
  // keep variant 6.
  for (const char* text : {"mb32ic24ih56oc64kh3ph1", "mb32ic96ih14oc576kh1"}) {
    const VariantChoice c =
        choose_variant(typed_problem(text, DataType::fp16, Layout::nhwc), kHopperNoEngine);
    EXPECT_EQ(c.variant, Variant::mma_repacked_implicit_gemm) << text;
    EXPECT_NE(c.why.find("not over half full"), std::string::npos) << c.why;
  }
}

TEST(VariantChoice, DirectKernelsAndFp32) {
  for (const VariantDevice& d : {kHopper, kAmpere, kNoTensorCores})
    for (DataType dt : bench::all_data_types()) {
      EXPECT_EQ(choose_variant(typed_problem("g32mb32ic32ih112oc32kh3ph1", dt), d).variant,
                Variant::depthwise);
      EXPECT_EQ(choose_variant(typed_problem("mb2ic4ih64oc8kh5", dt), d).variant,
                Variant::small_direct);
    }
  EXPECT_EQ(
      choose_variant(typed_problem("mb32ic64ih56oc64kh3sh2ph1", DataType::fp32), kHopper).variant,
      Variant::implicit_gemm_precomp);
  // Short fp32 grids that Winograd does not take (a 1x1 layer; a 3x3 one with 32 input
  // channels) stay with variant 3, whose split-K fills the GPU: it measured faster than variant 7
  // there.
  for (const char* text : {"mb32ic32ih28oc128kh3ph1", "mb32ic64ih14oc384kh1"})
    EXPECT_EQ(choose_variant(typed_problem(text, DataType::fp32), kHopper).variant,
              Variant::implicit_gemm_precomp)
        << text;
}

// Wide 1x1 layers with few output channels (MobileNet-v2's projections) take tensor cores in
// tf32/fp16/bf16, not variant 7; fp32, small or grouped 1x1 problems and other filters keep it.
TEST(VariantChoice, WideFewChannel1x1TakesTensorCores) {
  for (const VariantDevice& d : {kHopperNoEngine, kAmpere})
    for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16})
      for (const char* text :
           {"mb32ic32ih112oc16kh1", "mb32ic144ih56oc24kh1", "mb32ic192ih28oc32kh1"}) {
        const VariantChoice nchw = choose_variant(typed_problem(text, dt), d);
        EXPECT_EQ(nchw.variant, Variant::mma_implicit_gemm) << text;
        EXPECT_NE(nchw.why.find("1x1"), std::string::npos) << nchw.why;
        // nhwc: variant 13 (rule 1a) where it takes the layer (tf32 rows of at most 128
        // channels), else variant 6.
        const bool thin = dt != DataType::tf32 || std::string(text) == "mb32ic32ih112oc16kh1";
        EXPECT_EQ(choose_variant(typed_problem(text, dt, Layout::nhwc), d).variant,
                  thin ? Variant::thin_1x1 : Variant::mma_repacked_implicit_gemm)
            << text;
      }
  // fp32 1x1 layers go to variant 3; without mma.sync, tf32/fp16/bf16 keep variant 7.
  for (const VariantDevice& d : {kHopper, kNoTensorCores})
    EXPECT_EQ(choose_variant(typed_problem("mb32ic32ih112oc16kh1", DataType::fp32), d).variant,
              Variant::implicit_gemm_precomp);
  EXPECT_EQ(
      choose_variant(typed_problem("mb32ic32ih112oc16kh1", DataType::fp16), kNoTensorCores).variant,
      Variant::small_direct);
  // 127 x 128 = 16256 output pixels, under the 16384 of the rule (then variant 6, not variant 7);
  // 128 x 128 is over it.
  EXPECT_EQ(
      choose_variant(typed_problem("mb1ic32ih127iw128oc16kh1kw1", DataType::fp16), kAmpere).variant,
      Variant::mma_repacked_implicit_gemm);
  EXPECT_EQ(
      choose_variant(typed_problem("mb1ic32ih128iw128oc16kh1kw1", DataType::fp16), kAmpere).variant,
      Variant::mma_implicit_gemm);
  for (const char* text : {"mb1ic8ih1oc8kh1", "g2mb32ic64ih56oc32kh1"})
    EXPECT_EQ(choose_variant(typed_problem(text, DataType::fp16), kHopper).variant,
              Variant::small_direct)
        << text;
}

// Variant 7 keeps OC/G <= 8 and grouped layers in every dtype; with 16-32 output channels the
// tensor-core variants take tf32/fp16/bf16, and in fp32 variant 3 takes nhwc, 1x1 filters and
// inputs of under 8 channels. 3-channel inputs with few output channels go to variant 4.
TEST(VariantChoice, SmallOutputChannelRangeFromTheSearchRun) {
  for (DataType dt : bench::all_data_types())
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      EXPECT_EQ(choose_variant(typed_problem("mb2ic4ih128oc8kh7", dt, layout), kHopper).variant,
                Variant::small_direct);
      EXPECT_EQ(
          choose_variant(typed_problem("g2mb32ic64ih56oc32kh3ph1", dt, layout), kHopper).variant,
          Variant::small_direct);
    }
  // Inception-v3's Conv2d_2a_3x3.
  const char* conv2a = "mb32ic32ih149oc32kh3";
  EXPECT_EQ(choose_variant(typed_problem(conv2a, DataType::fp32), kHopper).variant,
            Variant::small_direct);
  EXPECT_EQ(choose_variant(typed_problem(conv2a, DataType::fp32, Layout::nhwc), kHopper).variant,
            Variant::implicit_gemm_precomp);
  EXPECT_EQ(choose_variant(typed_problem(conv2a, DataType::tf32, Layout::nhwc), kHopper).variant,
            Variant::wgmma_implicit_gemm);  // 32 tf32 channels: one 128-byte slice per tap
  for (DataType dt : {DataType::fp16, DataType::bf16})  // 32 of a slice's 64: half full
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      EXPECT_EQ(choose_variant(typed_problem(conv2a, dt, layout), kHopper).variant,
                Variant::mma_repacked_implicit_gemm);
  // Where the mma.sync kernels do not run, tf32/fp16/bf16 keep variant 7.
  EXPECT_EQ(choose_variant(typed_problem(conv2a, DataType::fp16), kNoTensorCores).variant,
            Variant::small_direct);
  // First layers: 3 channels, 32 outputs -> variant 4 in both layouts; 64 outputs keep variant 6;
  // fp32 takes variant 3.
  for (const char* text : {"mb32ic3ih299oc32kh3sh2", "mb32ic3ih224oc32kh3sh2ph1"}) {
    for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc})
        for (const VariantDevice& d : {kHopper, kAmpere}) {
          const VariantChoice c = choose_variant(typed_problem(text, dt, layout), d);
          EXPECT_EQ(c.variant, Variant::mma_implicit_gemm) << text;
          EXPECT_NE(c.why.find("fewer than 8 input channels"), std::string::npos) << c.why;
        }
    EXPECT_EQ(choose_variant(typed_problem(text, DataType::fp32), kHopper).variant,
              Variant::implicit_gemm_precomp);
  }
  EXPECT_EQ(
      choose_variant(typed_problem("mb32ic3ih224oc64kh7sh2ph3", DataType::fp16), kHopper).variant,
      Variant::mma_repacked_implicit_gemm);
}

// Rule 1a: variant 13 for the nhwc 1x1 layers it was measured faster on (thin_1x1_preferred),
// wherever the mma.sync kernels run; not in nchw, fp32, on other filters, or where it lost.
TEST(VariantChoice, Nhwc1x1TakesTheThinKernelWhereItMeasuredFaster) {
  for (const VariantDevice& d : {kHopper, kAmpere})
    for (DataType dt : {DataType::fp16, DataType::bf16}) {
      for (const char* text :
           {"mb32ic32ih112oc16kh1", "mb32ic16ih112oc96kh1", "mb32ic64ih73oc80kh1",
            "mb32ic144ih56oc24kh1", "mb32ic192ih35oc32kh1"}) {
        const VariantChoice c = choose_variant(typed_problem(text, dt, Layout::nhwc), d);
        EXPECT_EQ(c.variant, Variant::thin_1x1) << text;
        EXPECT_NE(c.why.find("one streaming kernel"), std::string::npos) << c.why;
        EXPECT_NE(choose_variant(typed_problem(text, dt), d).variant, Variant::thin_1x1) << text;
      }
      // IC >= 192 and OC >= 48: variant 10 was faster on Hopper.
      for (const char* text : {"mb32ic192ih35oc64kh1", "mb32ic256ih35oc48kh1"})
        EXPECT_NE(choose_variant(typed_problem(text, dt, Layout::nhwc), d).variant,
                  Variant::thin_1x1)
            << text;
    }
  // tf32 where OC <= 2 IC (the projects, Inception-v3's Conv2d_3b_1x1); the expands keep their
  // rules.
  for (const char* text : {"mb32ic32ih112oc16kh1", "mb32ic96ih56oc24kh1", "mb32ic64ih73oc80kh1"})
    EXPECT_EQ(choose_variant(typed_problem(text, DataType::tf32, Layout::nhwc), kHopper).variant,
              Variant::thin_1x1)
        << text;
  for (const char* text : {"mb32ic16ih112oc96kh1", "mb32ic24ih56oc144kh1", "mb32ic32ih28oc192kh1"})
    EXPECT_NE(choose_variant(typed_problem(text, DataType::tf32, Layout::nhwc), kHopper).variant,
              Variant::thin_1x1)
        << text;
  // fp32, or no mma.sync; strided, padded or wider filters.
  const char* b1 = "mb32ic32ih112oc16kh1";
  EXPECT_NE(choose_variant(typed_problem(b1, DataType::fp32, Layout::nhwc), kHopper).variant,
            Variant::thin_1x1);
  EXPECT_NE(choose_variant(typed_problem(b1, DataType::fp16, Layout::nhwc), kNoTensorCores).variant,
            Variant::thin_1x1);
  for (const char* text :
       {"mb32ic32ih112oc16kh1sh2", "mb32ic32ih112oc16kh1ph1", "mb32ic32ih112oc16kh3ph1"})
    EXPECT_NE(choose_variant(typed_problem(text, DataType::fp16, Layout::nhwc), kHopper).variant,
              Variant::thin_1x1)
        << text;
}

// Variant 11 where the engine runs: fp16/bf16 1x1 layers, stride 1, no padding, one group, whose
// GEMM rows are whole 16-byte units (nchw: H*W, IC; nhwc: OC, IC multiples of 8), where it was
// measured faster than the rules below it (variant_choice.cpp: engine_1x1_preferred).
TEST(VariantChoice, Hopper1x1TakesTheGemmEngine) {
  for (DataType dt : {DataType::fp16, DataType::bf16}) {
    // ResNet-50 res2_1x1_up: nchw on the engine, nhwc with variant 13 (rule 1a) before it.
    const VariantChoice c = choose_variant(typed_problem("mb32ic64ih56oc256kh1", dt), kHopper);
    EXPECT_EQ(c.variant, Variant::gemm_1x1);
    EXPECT_NE(c.why.find("GEMM engine"), std::string::npos) << c.why;
    EXPECT_EQ(
        choose_variant(typed_problem("mb32ic64ih56oc256kh1", dt, Layout::nhwc), kHopper).variant,
        Variant::thin_1x1);
    // nchw from 24 output channels on; 16 (MobileNet-v2's b1_project) keeps the old rules.
    for (const char* text :
         {"mb32ic24ih56oc144kh1", "mb32ic192ih28oc32kh1", "mb32ic144ih56oc24kh1"})
      EXPECT_EQ(choose_variant(typed_problem(text, dt), kHopper).variant, Variant::gemm_1x1)
          << text;
    EXPECT_NE(choose_variant(typed_problem("mb32ic32ih112oc16kh1", dt), kHopper).variant,
              Variant::gemm_1x1);
    // nhwc: 96 or more output channels over 64 or more input channels (MobileNet-v2's b4_2 and
    // b5_2 expands among them); few output or input channels keep variants 13, 6 and 10.
    for (const char* text : {"mb32ic960ih7oc320kh1", "mb32ic160ih7oc960kh1", "mb32ic384ih14oc96kh1",
                             "mb32ic96ih14oc576kh1", "mb32ic64ih14oc384kh1"})
      EXPECT_EQ(choose_variant(typed_problem(text, dt, Layout::nhwc), kHopper).variant,
                Variant::gemm_1x1)
          << text;
    for (const char* text : {"mb32ic192ih28oc32kh1", "mb32ic16ih112oc96kh1", "mb32ic384ih14oc64kh1",
                             "mb32ic288ih35oc64kh1"})
      EXPECT_NE(choose_variant(typed_problem(text, dt, Layout::nhwc), kHopper).variant,
                Variant::gemm_1x1)
          << text;
  }
  // 14x14 and 7x7 images: H*W = 196 and 49 are not whole 16-byte rows of the nchw GEMM's B; nhwc
  // reads OC-wide rows instead.
  for (const char* text : {"mb32ic384ih14oc96kh1", "mb32ic960ih7oc320kh1"}) {
    EXPECT_NE(choose_variant(typed_problem(text, DataType::fp16), kHopper).variant,
              Variant::gemm_1x1)
        << text;
    EXPECT_NE(gemm_1x1_unsupported_reason(typed_problem(text, DataType::fp16)).find("nchw"),
              std::string::npos);
    EXPECT_EQ(choose_variant(typed_problem(text, DataType::fp16, Layout::nhwc), kHopper).variant,
              Variant::gemm_1x1)
        << text;
  }
  // Not 1x1 stride 1 unpadded one group, not 16-bit, odd channel counts, or no engine.
  for (const char* text :
       {"mb32ic64ih56oc256kh1sh2", "mb32ic64ih56oc256kh1ph1", "g2mb32ic64ih56oc256kh1",
        "mb32ic64ih56oc256kh3ph1", "mb2ic20ih16oc64kh1", "mb2ic64ih16oc60kh1"})
    EXPECT_NE(choose_variant(typed_problem(text, DataType::fp16, Layout::nhwc), kHopper).variant,
              Variant::gemm_1x1)
        << text;
  for (DataType dt : {DataType::fp32, DataType::tf32})
    EXPECT_NE(choose_variant(typed_problem("mb32ic64ih56oc256kh1", dt), kHopper).variant,
              Variant::gemm_1x1);
  EXPECT_NE(choose_variant(typed_problem("mb32ic64ih56oc256kh1", DataType::fp16), kAmpere).variant,
            Variant::gemm_1x1);
}

TEST(VariantChoice, Gemm1x1Mapping) {
  const bench::gemm::GemmShape nchw =
      gemm_1x1_shape(typed_problem("mb32ic64ih56oc256kh1", DataType::fp16));
  EXPECT_EQ(nchw.batch, 32);
  EXPECT_EQ(nchw.m, 256);
  EXPECT_EQ(nchw.n, 56 * 56);
  EXPECT_EQ(nchw.k, 64);
  EXPECT_TRUE(nchw.a_shared);
  EXPECT_FALSE(nchw.b_k_major);
  const bench::gemm::GemmShape nhwc =
      gemm_1x1_shape(typed_problem("mb3ic24ih5iw7oc40kh1kw1", DataType::bf16, Layout::nhwc));
  EXPECT_EQ(nhwc.batch, 1);
  EXPECT_EQ(nhwc.m, 3 * 5 * 7);
  EXPECT_EQ(nhwc.n, 40);
  EXPECT_EQ(nhwc.k, 24);
  EXPECT_FALSE(nhwc.a_shared);
  EXPECT_TRUE(nhwc.b_k_major);
  EXPECT_EQ(gemm_1x1_unsupported_reason(
                typed_problem("mb3ic24ih5iw7oc40kh1kw1", DataType::bf16, Layout::nhwc)),
            "");
  EXPECT_NE(gemm_1x1_unsupported_reason(typed_problem("mb3ic24ih5iw7oc40kh1kw1", DataType::bf16)),
            "");
  EXPECT_NE(gemm_1x1_unsupported_reason(typed_problem("mb3ic24ih8oc40kh1", DataType::tf32)), "");
}

// Variant 11's plan on an H200's 132 SMs: the tile width with the fewer waves (a 256-wide wave
// costing 1.7 of a 128-wide one), split-K only over k of 32 blocks or more.
TEST(VariantChoice, Gemm1x1PlanCountsWaves) {
  namespace gemm = bench::gemm;
  const auto plan = [](const char* text, Layout layout) {
    return gemm_1x1_plan(gemm_1x1_shape(typed_problem(text, DataType::fp16, layout)), 132);
  };
  // n = 64: 307 tiles of either width, so 128 (gemm_auto_plan took 256).
  EXPECT_EQ(plan("mb32ic192ih35oc64kh1", Layout::nhwc).bn, 128);
  // 245 tiles of 128 (2 waves) against 147 of 256 (2 waves, the second near empty).
  EXPECT_EQ(plan("mb32ic96ih14oc576kh1", Layout::nhwc).bn, 128);
  // 147 tiles of 128 (2 waves) against 98 of 256 (one).
  EXPECT_EQ(plan("mb32ic64ih14oc384kh1", Layout::nhwc).bn, 256);
  EXPECT_EQ(plan("mb32ic64ih56oc256kh1", Layout::nhwc).bn, 256);
  // nchw b2_1_expand: 3136 tiles of 128 (24 waves) against 1568 of 256 (12): 256, not ping-pong.
  const gemm::GemmPlan expand = plan("mb32ic16ih112oc96kh1", Layout::nchw);
  EXPECT_EQ(expand.bn, 256);
  EXPECT_EQ(expand.schedule, gemm::GemmSchedule::cooperative);
  // 32 tiles over k = 2048 (32 blocks): 4 splits of 8 blocks; 48 tiles: 2.
  const gemm::GemmPlan pool = plan("mb32ic2048ih8oc192kh1", Layout::nhwc);
  EXPECT_EQ(pool.bn, 128);
  EXPECT_EQ(pool.splits, 4);
  EXPECT_EQ(plan("mb32ic2048ih8oc320kh1", Layout::nhwc).splits, 2);
  // k = 1280 (20 blocks): no split; 130 tiles fill the SMs: none.
  EXPECT_EQ(plan("mb32ic1280ih8oc192kh1", Layout::nhwc).splits, 1);
  EXPECT_EQ(plan("mb32ic320ih7oc1280kh1", Layout::nhwc).splits, 1);
  EXPECT_EQ(plan("mb32ic320ih7oc1280kh1", Layout::nhwc).bn, 128);
}

// The experiments' BN:S plan overrides (MYCONV_WGMMA_PLAN, MYCONV_GEMM_1X1_PLAN): unset or empty
// leaves the plan alone; a width not offered, S past the maximum or trailing text are refused.
TEST(VariantChoice, PlanOverridesParseOrAreRefused) {
  const char* name = "MYCONV_TEST_PLAN_OVERRIDE";
  unsetenv(name);
  EXPECT_FALSE(plan_override(name, {0, 128, 256}, 16).has_value());
  setenv(name, "", 1);
  EXPECT_FALSE(plan_override(name, {0, 128, 256}, 16).has_value());
  setenv(name, "256:3", 1);
  const std::optional<PlanOverride> o = plan_override(name, {0, 128, 256}, 16);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->bn, 256);
  EXPECT_EQ(o->splits, 3);
  setenv(name, "0:0", 1);
  EXPECT_EQ(plan_override(name, {0, 64, 128}, 8)->bn, 0);
  for (const char* bad : {"64:1", "128:17", "128:-1", "128", "128:2x", "x"}) {
    setenv(name, bad, 1);
    EXPECT_THROW(plan_override(name, {0, 128, 256}, 16), std::invalid_argument) << bad;
  }
  setenv(name, "256:1", 1);
  try {
    plan_override(name, {0, 64, 128}, 8);
    ADD_FAILURE() << "256 is not a width offered";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("BN 0, 64, 128 and S 0 to 8"), std::string::npos)
        << e.what();
  }
  unsetenv(name);
}

TEST(VariantChoice, WithoutWgmmaOrTensorCores) {
  EXPECT_EQ(
      choose_variant(typed_problem("mb32ic64ih56oc64kh3ph1", DataType::fp16), kAmpere).variant,
      Variant::mma_repacked_implicit_gemm);
  const VariantChoice none =
      choose_variant(typed_problem("mb32ic64ih56oc64kh3ph1", DataType::bf16), kNoTensorCores);
  EXPECT_EQ(none.variant, Variant::caffe);
  EXPECT_FALSE(none.why.empty());
}

TEST(VariantChoice, SearchCandidatesTakeTheDtype) {
  const auto fp32 = variant_candidates(DataType::fp32);
  EXPECT_TRUE(std::none_of(fp32.begin(), fp32.end(), uses_tensor_cores));
  const auto fp16 = variant_candidates(DataType::fp16);
  EXPECT_NE(std::find(fp16.begin(), fp16.end(), Variant::wgmma_implicit_gemm), fp16.end());
  EXPECT_NE(std::find(fp16.begin(), fp16.end(), Variant::gemm_1x1), fp16.end());
  EXPECT_EQ(std::find(fp16.begin(), fp16.end(), Variant::implicit_gemm_precomp), fp16.end());
  // Variant 12 (Winograd) is searched in fp32 only.
  EXPECT_NE(std::find(fp32.begin(), fp32.end(), Variant::winograd), fp32.end());
  for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16}) {
    const auto c = variant_candidates(dt);
    EXPECT_EQ(std::find(c.begin(), c.end(), Variant::winograd), c.end()) << bench::to_string(dt);
    EXPECT_NE(std::find(c.begin(), c.end(), Variant::thin_1x1), c.end()) << bench::to_string(dt);
  }
  EXPECT_EQ(std::find(fp32.begin(), fp32.end(), Variant::thin_1x1), fp32.end());
}

// Variant 12 for fp32 3x3 stride-1 layers with >= 64 channels (rule 3b), on every device; tf32
// keeps its tensor-core variants, and small layers stay with the other rules. Its sub-variant:
// 12.2 for <= 64 input channels over >= 12544 2x2 tiles (ResNet-50's res2_3x3 at batch 32), else
// 12.1.
TEST(VariantChoice, WinogradForFp32ThreeByThreeStrideOneLayers) {
  for (const char* text : {"mb32ic64ih56oc64kh3ph1", "mb32ic128ih28oc128kh3ph1",
                           "mb32ic256ih14oc256kh3ph1", "mb32ic512ih7oc512kh3ph1"})
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      for (const VariantDevice& device : {kHopper, kAmpere, kNoTensorCores}) {
        EXPECT_EQ(choose_variant(typed_problem(text, DataType::fp32, layout), device).variant,
                  Variant::winograd)
            << text;
        EXPECT_NE(choose_variant(typed_problem(text, DataType::tf32, layout), device).variant,
                  Variant::winograd)
            << text;
      }
  EXPECT_NE(choose_variant(typed_problem("mb1ic3ih5oc7kh3", DataType::fp32), kHopper).variant,
            Variant::winograd);
  EXPECT_NE(
      choose_variant(typed_problem("mb32ic32ih28oc128kh3ph1", DataType::fp32), kHopper).variant,
      Variant::winograd);
  EXPECT_NE(
      choose_variant(typed_problem("mb32ic128ih28oc128kh3sh2ph1", DataType::fp32), kHopper).variant,
      Variant::winograd);
  const std::pair<const char*, int> subs[] = {
      {"mb32ic64ih56oc64kh3ph1", 2},  {"mb32ic128ih28oc128kh3ph1", 1},
      {"mb8ic512ih7oc512kh3ph1", 1},  {"mb16ic128ih112oc128kh3ph1", 1},
      {"mb16ic64ih224oc64kh3ph1", 2},
  };
  for (const auto& [text, sub] : subs)
    EXPECT_EQ(winograd_sub_variant(
                  make_winograd_geometry(typed_problem(text, DataType::fp32, Layout::nchw))),
              sub)
        << text;
}

}  // namespace
}  // namespace conv
