#include "conv/problem.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace conv {
namespace {

TEST(Problem, SeedDescriptorRoundTrips) {
  const Problem p = parse_problem("mb2ic4ih64oc8kh5");
  EXPECT_EQ(p.mb, 2);
  EXPECT_EQ(p.ic, 4);
  EXPECT_EQ(p.ih, 64);
  EXPECT_EQ(p.iw, 64);
  EXPECT_EQ(p.oc, 8);
  EXPECT_EQ(p.kh, 5);
  EXPECT_EQ(p.kw, 5);
  EXPECT_EQ(p.str(), "mb2ic4ih64oc8kh5");
}

TEST(Problem, EveryFieldRoundTrips) {
  const char* descriptors[] = {
      "mb32ic64ih56oc64kh3ph1",
      "mb32ic3ih224oc64kh7sh2ph3",
      "g32mb1ic32ih112oc32kh3ph1dtbf16nhwc",
      "g2mb3ic6ih17iw23oc10kh3kw2sh2sw3ph1pw0dh2dw3dtfp16",
      "mb1ic1ih1oc1kh1dttf32",
      "mb7ic5ih9oc3kh3nhwc",
  };
  for (const char* d : descriptors) {
    const Problem p = parse_problem(d);
    EXPECT_EQ(p.str(), d);
    EXPECT_EQ(parse_problem(p.str()), p);
  }
}

TEST(Problem, DefaultsAreOmittedAndWidthFollowsHeight) {
  const Problem p = parse_problem("mb2ic4ih10oc4kh3sh2ph1dh2");
  EXPECT_EQ(p.iw, 10);
  EXPECT_EQ(p.kw, 3);
  EXPECT_EQ(p.sw, 2);
  EXPECT_EQ(p.pw, 1);
  EXPECT_EQ(p.dw, 2);
  // Explicitly written defaults disappear from the canonical form.
  EXPECT_EQ(parse_problem("g1mb2ic4ih10iw10oc4kh3kw3sh1ph0dh1dtfp32nchw").str(),
            "mb2ic4ih10oc4kh3");
}

TEST(Problem, DescriptorOverridesDefaults) {
  Problem defaults;
  defaults.dtype = DataType::bf16;
  defaults.layout = Layout::nhwc;
  defaults.mb = 16;
  const Problem p = parse_problem("ic4ih8oc4kh3", defaults);
  EXPECT_EQ(p.mb, 16);
  EXPECT_EQ(p.dtype, DataType::bf16);
  EXPECT_EQ(p.layout, Layout::nhwc);
  EXPECT_EQ(parse_problem("ic4ih8oc4kh3dtfp32nchw", defaults).dtype, DataType::fp32);
}

TEST(Problem, NameSuffixIsParsedButNotPartOfIdentity) {
  const Problem p = parse_problem("mb32ic64ih56oc64kh3ph1n\"res2_3x3\"");
  EXPECT_EQ(p.name, "res2_3x3");
  EXPECT_EQ(p.str(), "mb32ic64ih56oc64kh3ph1");
  EXPECT_EQ(p.str_with_name(), "mb32ic64ih56oc64kh3ph1n\"res2_3x3\"");
  EXPECT_EQ(p, parse_problem("mb32ic64ih56oc64kh3ph1"));
}

TEST(Problem, MalformedDescriptorsThrowUsageError) {
  const char* bad[] = {"",
                       "mb2",
                       "mb2ic4ih64oc8",
                       "xx2ic4ih64oc8kh5",
                       "mbic4",
                       "mb2ic4ih64oc8kh5dtfp64",
                       "mb2mb3ic4ih8oc8kh3",
                       "mb-2ic4ih8oc8kh3",
                       "mb2ic4ih8oc8kh3n\"open",
                       "mb2ic4ih8oc8kh3 ",
                       "mb2ic4ih8oc8kh99999999999"};
  for (const char* d : bad) EXPECT_THROW(parse_problem(d), bench::UsageError) << d;
}

TEST(Problem, InvalidProblemsAreRejectedWithTheField) {
  auto why = [](const char* d) {
    try {
      parse_problem(d);
    } catch (const bench::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(why("mb2ic4ih4oc8kh5").find("larger than the padded input"), std::string::npos);
  EXPECT_EQ(why("mb2ic4ih4oc8kh5ph1").find("larger than"), std::string::npos);  // 6x6 >= 5x5
  EXPECT_NE(why("g3mb2ic4ih8oc6kh3").find("divisible by groups"), std::string::npos);
  EXPECT_NE(why("mb0ic4ih8oc6kh3").find("mb (batch_size) must be at least 1"), std::string::npos);
  EXPECT_NE(why("mb2ic4ih8oc6kh3sh0").find("stride"), std::string::npos);
  EXPECT_NE(why("mb2ic4ih8oc6kh3dh0").find("dilation"), std::string::npos);
  EXPECT_EQ(why("mb2ic4ih8oc6kh3ph3"), "accepted");  // padding past the kernel is legal
  EXPECT_NE(why("mb1024ic1024ih1024oc8kh3").find("elements"), std::string::npos);
}

TEST(Problem, DerivedNumbers) {
  const Problem p = parse_problem("mb32ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(p.oh(), 112);
  EXPECT_EQ(p.ow(), 112);
  EXPECT_EQ(p.reduction_length(), 3 * 7 * 7);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 32 * 64 * 112 * 112 * 147);
  EXPECT_DOUBLE_EQ(p.bytes(), 4.0 * (32 * 3 * 224 * 224 + 64 * 3 * 49 + 32 * 64 * 112 * 112));
  const GemmShape g = p.gemm();
  EXPECT_EQ(g.m, 32 * 112 * 112);
  EXPECT_EQ(g.n, 64);
  EXPECT_EQ(g.k, 147);
  EXPECT_EQ(g.groups, 1);

  const Problem dw = parse_problem("g32mb1ic32ih112oc32kh3ph1dh2dtbf16");
  EXPECT_EQ(dw.oh(), 110);  // 112 + 2 - 2*(3-1) - 1 + 1
  EXPECT_EQ(dw.gemm().n, 1);
  EXPECT_EQ(dw.gemm().k, 9);
  EXPECT_EQ(dw.gemm().groups, 32);
  EXPECT_DOUBLE_EQ(dw.bytes(), 2.0 * (32 * 112 * 112 + 32 * 9 + 32 * 110 * 110));
}

TEST(Problem, ShapesFollowLayout) {
  Problem p = parse_problem("g2mb2ic4ih5iw6oc8kh3kw2");
  EXPECT_EQ(p.src_shape(), (std::vector<std::int64_t>{2, 4, 5, 6}));
  EXPECT_EQ(p.wei_shape(), (std::vector<std::int64_t>{8, 2, 3, 2}));
  EXPECT_EQ(p.dst_shape(), (std::vector<std::int64_t>{2, 8, 3, 5}));
  p.layout = Layout::nhwc;
  EXPECT_EQ(p.src_shape(), (std::vector<std::int64_t>{2, 5, 6, 4}));
  EXPECT_EQ(p.wei_shape(), (std::vector<std::int64_t>{8, 3, 2, 2}));
  EXPECT_EQ(p.dst_shape(), (std::vector<std::int64_t>{2, 3, 5, 8}));
}

TEST(Problem, ParamsListEveryField) {
  const auto j = parse_problem("mb2ic4ih64oc8kh5dtbf16nhwc").params();
  EXPECT_EQ(j["mb"], 2);
  EXPECT_EQ(j["oh"], 60);
  EXPECT_EQ(j["dtype"], "bf16");
  EXPECT_EQ(j["layout"], "nhwc");
}

TEST(Layout, ParseAndPrint) {
  EXPECT_EQ(parse_layout("nchw"), Layout::nchw);
  EXPECT_EQ(to_string(parse_layout("nhwc")), "nhwc");
  EXPECT_THROW(parse_layout("chwn"), bench::UsageError);
}

}  // namespace
}  // namespace conv
