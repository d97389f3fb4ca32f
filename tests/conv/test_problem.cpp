#include "conv/problem.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/common/case_helpers.hpp"

namespace conv {
namespace {

std::string why_rejected(const std::string& d) {
  return bench::testing::why_rejected_by([](const std::string& s) { parse_problem(s); }, d);
}

TEST(Problem, SeedDescriptorRoundTrips) {
  const Problem p = parse_problem("mb2ic4ih64oc8kh5");
  EXPECT_EQ(p.mb, 2);
  EXPECT_EQ(p.ic, 4);
  EXPECT_EQ(p.ih, 64);
  EXPECT_EQ(p.iw, 64);
  EXPECT_EQ(p.oc, 8);
  EXPECT_EQ(p.kh, 5);
  EXPECT_EQ(p.kw, 5);
  EXPECT_EQ(p.dh, 0);
  EXPECT_EQ(p.dilation_h(), 1);
  EXPECT_EQ(p.str(), "mb2ic4ih64oc8kh5");
}

TEST(Problem, EveryFieldRoundTrips) {
  const char* descriptors[] = {
      "mb32ic64ih56oc64kh3ph1",
      "mb32ic3ih224oc64kh7sh2ph3",
      "g32mb1ic32ih112oc32kh3ph1dtbf16nhwc",
      "g2mb3ic6ih17iw23oc10kh3kw2sh2sw3ph1dh2dw3dtfp16",
      "mb1ic1ih1oc1kh1dttf32",
      "mb7ic5ih9oc3kh3nhwc",
      "mb2ic3ih13iw13oc5kh3kw3sw2ph1pw1",  // only the stride differs: every width field written
      "mb20ic4ih8oc6oh5kh3ph1dh1",         // asymmetric padding: the output size is kept
      "mb20ic4ih8iw8oc6oh4kh3kw3sh2ph1pw1dh1",
      "mb2ic4id5ih6iw7oc8kd3kh3kw3",  // 3D, kept as read
      "mb2ic4id5oc8kd3pd1",           // 3D, cubic
  };
  for (const char* d : descriptors) {
    const Problem p = parse_problem(d);
    EXPECT_EQ(p.str(), d);
    EXPECT_EQ(parse_problem(p.str()), p);
  }
}

TEST(Problem, DilationCountsTheGapsAsInBenchdnn) {
  const Problem p = parse_problem("mb2ic4ih10oc4kh3dh1");
  EXPECT_EQ(p.dh, 1);
  EXPECT_EQ(p.dilation_h(), 2);  // PyTorch's
  EXPECT_EQ(p.oh(), 6);          // 10 - ((3 - 1) * 2 + 1) + 1
  EXPECT_EQ(parse_problem("mb2ic4ih10oc4kh3dh0").str(), "mb2ic4ih10oc4kh3");
  const auto j = p.params();
  EXPECT_EQ(j["dh"], 1);
  EXPECT_EQ(j["dilation_h"], 2);
}

TEST(Problem, WidthIsACopyOfHeightOnlyWhenNoWidthFieldIsWritten) {
  const Problem p = parse_problem("mb2ic4ih10oc4kh3sh2ph1dh1");
  EXPECT_EQ(p.iw, 10);
  EXPECT_EQ(p.kw, 3);
  EXPECT_EQ(p.sw, 2);
  EXPECT_EQ(p.pw, 1);
  EXPECT_EQ(p.dw, 1);
  // A width field written: the width takes benchdnn's defaults, not the height's values.
  const Problem q = parse_problem("mb2ic4ih10iw12oc4kh3kw5sh2ph1dh1");
  EXPECT_EQ(q.sw, 1);
  EXPECT_EQ(q.pw, 0);
  EXPECT_EQ(q.dw, 0);
  EXPECT_NE(why_rejected("mb2ic4ih10oc4kh3sw2").find("'iw' and 'kw' are required"),
            std::string::npos);
  // Explicitly written defaults disappear from the canonical form.
  EXPECT_EQ(parse_problem("g1mb2ic4ih10iw10oc4kh3kw3sh1ph0dh0dtfp32nchw").str(),
            "mb2ic4ih10oc4kh3");
}

TEST(Problem, BenchdnnSeparatorsNamesAndDefaults) {
  // From benchdnn's inputs/conv files: '_' between groups, the name to the end, mb 2 by default.
  const Problem p = parse_problem("mb2_ic3oc48_ih227oh111kh5sh2ph1dh1_n\"dilated_conv:18\"");
  EXPECT_EQ(p.name, "dilated_conv:18");
  EXPECT_EQ(p.oh(), 111);
  EXPECT_TRUE(p.unsupported_reason().empty()) << p.unsupported_reason();
  const Problem q = parse_problem("ic32oc13_ih13oh12kh3ph0_n\"tails_conv:1\"");
  EXPECT_EQ(q.mb, 2);
  EXPECT_EQ(q.name, "tails_conv:1");
  const Problem r =
      parse_problem("g1mb50ic3ih224iw224oc64oh112ow112kh7kw7sh2sw2ph3pw3n\"resnet_50:conv1\"");
  EXPECT_EQ(r.str_with_name(), "mb50ic3ih224oc64kh7sh2ph3n\"resnet_50:conv1\"");
  EXPECT_EQ(r.ph_r(), 2);  // benchdnn's right padding: the last stride step leaves a row unused
  EXPECT_TRUE(r.unsupported_reason().empty());
  // A multiplicity in the name stays part of the label; any character inside the quotes.
  EXPECT_EQ(parse_problem("mb50ic64ih56oc64oh56kh3ph1n\"resnet_50:res2a_branch2b*3\"").name,
            "resnet_50:res2a_branch2b*3");
  EXPECT_EQ(parse_problem("mb1ic2ih8oc2kh3n\"a b#c:d\"").name, "a b#c:d");
  EXPECT_EQ(parse_problem("mb1ic2ih8oc2kh3nunquoted_name").name, "unquoted_name");
  // Padding derived from the output size where only that is written.
  EXPECT_EQ(parse_problem("mb1ic2ih56oc2oh56kh3").ph, 1);
  EXPECT_EQ(parse_problem("mb2ic16ih33oc16oh16kh2sh2").ph, 0);  // C++ division: -1 / 2 == 0
}

TEST(Problem, DilatedBenchdnnLineHasBenchdnnsOutputSize) {
  // shapes_dilated: mb20ic4ih8oc6oh3kh3sh2ph1dh1 -> (8 - ((3 - 1) * 2 + 1) + 2) / 2 + 1 = 3.
  const Problem p = parse_problem("mb20ic4ih8oc6oh3kh3sh2ph1dh1n\"dilated_conv:1\"");
  EXPECT_EQ(p.oh(), 3);
  EXPECT_EQ(p.ow(), 3);
  EXPECT_EQ(p.dilation_h(), 2);
  EXPECT_TRUE(p.unsupported_reason().empty());
  EXPECT_EQ(p.str(), "mb20ic4ih8oc6kh3sh2ph1dh1");
}

TEST(Problem, OneDimensionalIsTwoDimensionalOfHeightOne) {
  const Problem p = parse_problem("g1mb50ic3iw224oc64ow112kw7sw2pw3n\"conv1d:2\"");
  EXPECT_EQ(p.ih, 1);
  EXPECT_EQ(p.kh, 1);
  EXPECT_EQ(p.oh(), 1);
  EXPECT_EQ(p.ow(), 112);
  EXPECT_TRUE(p.unsupported_reason().empty());
  EXPECT_EQ(p.str(), "mb50ic3ih1iw224oc64kh1kw7sw2pw3");
}

TEST(Problem, AsymmetricPaddingAndThreeDimensionsAreKeptButUnsupported) {
  // dilated_conv:2: oh5 with ph1 means a bottom padding of 0; symmetric padding would give 6.
  const Problem a = parse_problem("mb20ic4ih8oc6oh5kh3ph1dh1");
  EXPECT_EQ(a.oh(), 5);
  EXPECT_EQ(a.symmetric_oh(), 6);
  EXPECT_EQ(a.ph_r(), 0);
  EXPECT_NE(a.unsupported_reason().find("asymmetric padding"), std::string::npos);
  EXPECT_NE(a.unsupported_reason().find("oh5"), std::string::npos);
  EXPECT_EQ(a.params()["ph_r"], 0);
  // Padding on the right only (benchdnn's dw-conv "pw-right" lines): the input alone is too narrow.
  const Problem r = parse_problem("mb1_g16_ic16oc16_kh1kw2_ih1iw1_oh1ow1_sh1sw1_ph0pw0_dh0dw0");
  EXPECT_EQ(r.ow(), 1);
  EXPECT_EQ(r.pw_r(), 1);
  EXPECT_FALSE(r.unsupported_reason().empty());
  // benchdnn's integer division gives od1, though the kernel overhangs the unpadded input: a
  // padding at the back only (shapes_3d_strided_no-padding "pd-back(1)"), so asymmetric too.
  const Problem back = parse_problem("mb1_ic16oc16_kh3kw1_ih2iw1_oh1ow1_sh2sw1_ph0pw0");
  EXPECT_EQ(back.oh(), 1);
  EXPECT_EQ(back.ph_r(), 1);
  EXPECT_FALSE(back.unsupported_reason().empty());
  EXPECT_EQ(parse_problem(back.str()), back);
  const Problem d = parse_problem("mb2ic4id5ih6iw7oc8kd3kh3kw3n\"3d\"");
  EXPECT_TRUE(d.is_3d());
  EXPECT_EQ(d.od(), 3);
  EXPECT_NE(d.unsupported_reason().find("3D"), std::string::npos);
  EXPECT_DOUBLE_EQ(d.flops(), 2.0 * 2 * 8 * 3 * 4 * 5 * 4 * 27);
  // A one-plane depth under a one-plane kernel is the 2D problem (benchdnn's *_2d inputs).
  const Problem flat =
      parse_problem("mb1_ic16oc16_kd1kh3kw1_id1ih5iw1_od1oh3ow1_sd1sh1sw1_pd0ph0pw0_dd0dh0dw0");
  EXPECT_FALSE(flat.is_3d());
  EXPECT_EQ(flat.str(), "mb1ic16ih5iw1oc16kh3kw1");
  EXPECT_TRUE(flat.unsupported_reason().empty());
  EXPECT_TRUE(parse_problem("mb1ic16id2ih5iw1oc16kd1kh3kw1").is_3d());
  // Cubic: height and width copied from the depth.
  const Problem c = parse_problem("mb2ic4id5oc8kd3pd1");
  EXPECT_EQ(c.ih, 5);
  EXPECT_EQ(c.kw, 3);
  EXPECT_EQ(c.pw, 1);
  EXPECT_NE(why_rejected("mb2ic4id5ih5oc8kd3kh3").find("both the h and the w"), std::string::npos);
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
  // A layout token is told from an unquoted name by what follows it.
  EXPECT_EQ(parse_problem("mb1ic2ih8oc2kh3nhwc").layout, Layout::nhwc);
  EXPECT_EQ(parse_problem("mb1ic2ih8oc2kh3nhwcx").name, "hwcx");
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
                       "mb2ic4ih8oc8kh3n\"a\"b",
                       "mb2ic4ih8oc8kh3nab\"c",
                       "mb2ic4ih8oc8kh3 ",
                       "_mb2ic4ih8oc8kh3",
                       "mb2__ic4ih8oc8kh3",
                       "mb2ic4ih8oc8kh99999999999",
                       "g0mb2ic4ih8oc8kh3",
                       "mb2ic4ih8oc8kh3sh0",
                       "mb2ic4oc8",
                       "mb2ic4ih8oc8kh3oh0kh3"};
  for (const char* d : bad) EXPECT_THROW(parse_problem(d), bench::UsageError) << d;
  EXPECT_NO_THROW(parse_problem("mb2_ic4_ih8_oc8_kh3_"));
}

TEST(Problem, InvalidProblemsAreRejectedWithTheField) {
  EXPECT_NE(why_rejected("mb2ic4ih4oc8kh5").find("larger than the padded input"),
            std::string::npos);
  EXPECT_EQ(why_rejected("mb2ic4ih4oc8kh5ph1"), "accepted");  // 6x6 >= 5x5
  EXPECT_NE(why_rejected("g3mb2ic4ih8oc6kh3").find("divisible by groups"), std::string::npos);
  EXPECT_NE(why_rejected("mb0ic4ih8oc6kh3").find("mb (batch_size) must be at least 1"),
            std::string::npos);
  EXPECT_NE(why_rejected("mb2ic4ih8oc6kh3sh0").find("'sh' must be positive"), std::string::npos);
  EXPECT_EQ(why_rejected("mb2ic4ih8oc6kh3ph3"), "accepted");  // padding past the kernel is legal
  // Too large for 32-bit indexing: a valid problem, recorded as unsupported.
  EXPECT_EQ(why_rejected("mb1024ic1024ih1024oc8kh3"), "accepted");
  EXPECT_NE(parse_problem("mb1024ic1024ih1024oc8kh3").unsupported_reason().find("32-bit"),
            std::string::npos);
  EXPECT_NE(parse_problem("mb1ic32oc1iw134217732kw3").unsupported_reason().find("2^31-1"),
            std::string::npos);  // benchdnn's shapes_large_conv
  EXPECT_NE(parse_problem("mb1ic1oc1iw4294967311kw3").unsupported_reason().find("2^31-1"),
            std::string::npos);  // a size past 2^32
  EXPECT_NE(why_rejected("mb1ic1ih8oc1kh1sh2097152").find("at most 1048576"), std::string::npos);
  Problem named = parse_problem("mb2ic4ih8oc6kh3");
  named.name = "a\"b";
  EXPECT_NE(named.validate().find("name"), std::string::npos);
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

  const Problem dw = parse_problem("g32mb1ic32ih112oc32kh3ph1dh1dtbf16");
  EXPECT_EQ(dw.oh(), 110);  // 112 + 2 - ((3 - 1) * 2 + 1) + 1
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
  EXPECT_EQ(j["dh"], 0);
  EXPECT_EQ(j["dilation_w"], 1);
  EXPECT_EQ(j["dtype"], "bf16");
  EXPECT_EQ(j["layout"], "nhwc");
  EXPECT_FALSE(j.contains("ph_r"));
  EXPECT_FALSE(j.contains("id"));
}

TEST(Layout, ParseAndPrint) {
  EXPECT_EQ(parse_layout("nchw"), Layout::nchw);
  EXPECT_EQ(to_string(parse_layout("nhwc")), "nhwc");
  EXPECT_THROW(parse_layout("chwn"), bench::UsageError);
}

}  // namespace
}  // namespace conv
