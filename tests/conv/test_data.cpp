#include "conv/data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "conv/indexing.hpp"

namespace conv {
namespace {

TEST(FillRandom, DeterministicBoundedAndNotConstant) {
  std::vector<float> a(10000), b(10000), c(10000);
  fill_random(a, 42, DataType::fp32);
  fill_random(b, 42, DataType::fp32);
  fill_random(c, 43, DataType::fp32);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double sum = 0;
  std::set<float> distinct(a.begin(), a.end());
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_GT(distinct.size(), 9000u);
  EXPECT_NEAR(sum / a.size(), 0.0, 0.05);
}

TEST(FillRandom, ValuesAreRepresentableInTheDtype) {
  for (DataType dt : {DataType::fp16, DataType::bf16}) {
    std::vector<float> v(1000);
    fill_random(v, 7, dt);
    for (float x : v) EXPECT_EQ(bench::round_to(dt, x), x);
  }
}

TEST(ProblemSeed, DependsOnProblemAndUserSeed) {
  const Problem a = parse_problem("mb2ic4ih8oc8kh3"), b = parse_problem("mb2ic4ih9oc8kh3");
  EXPECT_EQ(problem_seed(a, 1), problem_seed(a, 1));
  EXPECT_NE(problem_seed(a, 1), problem_seed(b, 1));
  EXPECT_NE(problem_seed(a, 1), problem_seed(a, 2));
}

TEST(Reference, HandComputedCase) {
  // 1x1x3x3 input 1..9, 2x2 kernel [[1,0],[0,-1]]: out = in[h][w] - in[h+1][w+1] = -4 everywhere.
  const Problem p = parse_problem("mb1ic1ih3oc1kh2");
  std::vector<float> src = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wei = {1, 0, 0, -1};
  std::vector<double> dst(4);
  reference_conv(p, src.data(), wei.data(), dst.data());
  for (double v : dst) EXPECT_EQ(v, -4.0);

  // Padding 1, stride 2: outputs at (0,0),(0,2),(2,0),(2,2) of the padded grid.
  const Problem q = parse_problem("mb1ic1ih3oc1kh2sh2ph1");
  std::vector<double> dst2(static_cast<std::size_t>(q.dst_elements()));
  ASSERT_EQ(dst2.size(), 4u);
  reference_conv(q, src.data(), wei.data(), dst2.data());
  // out(0,0) = pad(-1,-1)*1 - in(0,0) = -1; out(0,1) = pad*1 - in(0,2) = -3;
  // out(1,0) = pad - in(2,0) = -7; out(1,1) = in(1,1) - in(2,2) = 5 - 9 = -4.
  EXPECT_EQ(dst2, (std::vector<double>{-1, -3, -7, -4}));
}

// An independent formulation: explicit zero-padded copy of the input, then a plain loop.
std::vector<double> padded_reference(const Problem& p, const std::vector<float>& src,
                                     const std::vector<float>& wei) {
  const bool nhwc = p.layout == Layout::nhwc;
  const std::int64_t PH = p.ih + 2 * p.ph, PW = p.iw + 2 * p.pw, ICg = p.ic / p.g;
  std::vector<double> pad(static_cast<std::size_t>(p.mb * p.ic * PH * PW), 0.0);
  for (std::int64_t n = 0; n < p.mb; ++n)
    for (std::int64_t c = 0; c < p.ic; ++c)
      for (std::int64_t h = 0; h < p.ih; ++h)
        for (std::int64_t w = 0; w < p.iw; ++w)
          pad[static_cast<std::size_t>(((n * p.ic + c) * PH + h + p.ph) * PW + w + p.pw)] =
              src[static_cast<std::size_t>(act_offset(nhwc, n, c, h, w, p.ic, p.ih, p.iw))];
  std::vector<double> out(static_cast<std::size_t>(p.dst_elements()));
  for (std::int64_t n = 0; n < p.mb; ++n)
    for (std::int64_t o = 0; o < p.oc; ++o)
      for (std::int64_t y = 0; y < p.oh(); ++y)
        for (std::int64_t x = 0; x < p.ow(); ++x) {
          double acc = 0;
          const std::int64_t grp = o / (p.oc / p.g);
          for (std::int64_t i = 0; i < ICg; ++i)
            for (std::int64_t r = 0; r < p.kh; ++r)
              for (std::int64_t s = 0; s < p.kw; ++s)
                acc += pad[static_cast<std::size_t>(
                           ((n * p.ic + grp * ICg + i) * PH + y * p.sh + r * p.dilation_h()) * PW +
                           x * p.sw + s * p.dilation_w())] *
                       wei[static_cast<std::size_t>(wei_offset(nhwc, o, i, r, s, ICg, p.kh, p.kw))];
          out[static_cast<std::size_t>(act_offset(nhwc, n, o, y, x, p.oc, p.oh(), p.ow()))] = acc;
        }
  return out;
}

TEST(Reference, MatchesPaddedFormulationOnOddProblems) {
  const char* problems[] = {"g2mb3ic4ih7iw9oc6kh3kw2sh2ph1pw2dh1", "mb1ic3ih11oc5kh5sh3ph2",
                            "g4mb2ic4ih6oc4kh3ph1nhwc",
                            "g2mb2ic6ih9iw5oc4kh2kw3sw2ph1pw1dh2dw1nhwc"};
  for (const char* d : problems) {
    const Problem p = parse_problem(d);
    const HostData data = make_host_data(p, 3);
    const std::vector<double> expected = padded_reference(p, data.src, data.wei);
    ASSERT_EQ(data.ref.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(data.ref[i], expected[i], 1e-12) << d << " at " << i;
    EXPECT_GT(data.ref_rms, 0.1) << d;
  }
}

TEST(Reference, NhwcIsAPermutationOfNchw) {
  Problem a = parse_problem("g2mb2ic4ih5iw7oc6kh3kw3sh2sw2ph1pw1");
  Problem b = a;
  b.layout = Layout::nhwc;
  const HostData da = make_host_data(a, 9);
  // Same logical inputs in NHWC order.
  std::vector<float> src(da.src.size()), wei(da.wei.size());
  const std::int64_t ICg = a.ic / a.g;
  for (std::int64_t n = 0; n < a.mb; ++n)
    for (std::int64_t c = 0; c < a.ic; ++c)
      for (std::int64_t h = 0; h < a.ih; ++h)
        for (std::int64_t w = 0; w < a.iw; ++w)
          src[std::size_t(act_offset(true, n, c, h, w, a.ic, a.ih, a.iw))] =
              da.src[std::size_t(act_offset(false, n, c, h, w, a.ic, a.ih, a.iw))];
  for (std::int64_t o = 0; o < a.oc; ++o)
    for (std::int64_t i = 0; i < ICg; ++i)
      for (std::int64_t r = 0; r < a.kh; ++r)
        for (std::int64_t s = 0; s < a.kw; ++s)
          wei[std::size_t(wei_offset(true, o, i, r, s, ICg, a.kh, a.kw))] =
              da.wei[std::size_t(wei_offset(false, o, i, r, s, ICg, a.kh, a.kw))];
  std::vector<double> out(da.ref.size());
  reference_conv(b, src.data(), wei.data(), out.data());
  for (std::int64_t n = 0; n < a.mb; ++n)
    for (std::int64_t o = 0; o < a.oc; ++o)
      for (std::int64_t y = 0; y < a.oh(); ++y)
        for (std::int64_t x = 0; x < a.ow(); ++x)
          EXPECT_EQ(out[std::size_t(act_offset(true, n, o, y, x, a.oc, a.oh(), a.ow()))],
                    da.ref[std::size_t(act_offset(false, n, o, y, x, a.oc, a.oh(), a.ow()))]);
}

TEST(HostData, InputsAreRandomAndReferenceIsNotConstant) {
  const Problem p = parse_problem("mb2ic4ih16oc8kh3dtbf16");
  const HostData d = make_host_data(p, 1);
  EXPECT_EQ(d.src.size(), std::size_t(p.src_elements()));
  EXPECT_EQ(d.wei.size(), std::size_t(p.wei_elements()));
  EXPECT_EQ(d.ref.size(), std::size_t(p.dst_elements()));
  EXPECT_NE(d.src[0], d.src[1]);
  EXPECT_NE(d.ref[0], d.ref[1]);
  EXPECT_GT(host_bytes_needed(p), 8.0 * p.dst_elements());
}

// Stand-ins for the GPU reference (conv/cuda/reference_conv_cuda.hpp): one that fails, one that
// computes the reference on the host but marks its output, so the test sees which one ran.
std::string failing_device_reference(const Problem&, const float*, const float*, double*,
                                     std::shared_ptr<const DeviceCheck>*, std::string*) {
  return "out of memory";
}
std::string working_device_reference(const Problem& p, const float* src, const float* wei,
                                     double* dst, std::shared_ptr<const DeviceCheck>*,
                                     std::string* why_not_kept) {
  reference_conv(p, src, wei, dst);
  dst[0] += 1000;
  if (why_not_kept) *why_not_kept = "kept nowhere";
  return "";
}

TEST(ReferenceChoice, ParsesTheVariableAndFollowsTheRun) {
  const DeviceReferenceConv gpu = &working_device_reference;
  EXPECT_EQ(choose_reference(nullptr, true, gpu), gpu);  // unset = auto
  EXPECT_EQ(choose_reference("", true, gpu), gpu);
  EXPECT_EQ(choose_reference("auto", true, gpu), gpu);
  EXPECT_EQ(choose_reference("auto", false, gpu), nullptr);     // no GPU backend: the CPU
  EXPECT_EQ(choose_reference("auto", true, nullptr), nullptr);  // built without CUDA
  EXPECT_EQ(choose_reference("cpu", true, gpu), nullptr);
  EXPECT_EQ(choose_reference("gpu", false, gpu), gpu);
  EXPECT_THROW(choose_reference("gpu", true, nullptr), std::invalid_argument);
  EXPECT_THROW(choose_reference("GPU", true, gpu), std::invalid_argument);
  EXPECT_THROW(choose_reference("cuda", true, gpu), std::invalid_argument);
}

TEST(ReferenceChoice, CheckVariableForcesTheHostCheckOrIsRefused) {
  EXPECT_FALSE(host_check_forced(nullptr));
  EXPECT_FALSE(host_check_forced(""));
  EXPECT_FALSE(host_check_forced("auto"));
  EXPECT_TRUE(host_check_forced("host"));
  EXPECT_THROW(host_check_forced("cpu"), std::invalid_argument);
  EXPECT_THROW(host_check_forced("HOST"), std::invalid_argument);
}

TEST(ReferenceChoice, DeviceReferenceIsUsedAndAFailureFallsBackToTheCpu) {
  const Problem p = parse_problem("g2mb2ic4ih7oc6kh3ph1");
  const HostData cpu = make_host_data(p, 3);
  EXPECT_EQ(cpu.ref_device, "cpu");
  EXPECT_EQ(cpu.ref_fallback, "");

  const HostData dev = make_host_data(p, 3, &working_device_reference);
  EXPECT_EQ(dev.ref_device, "cuda");
  EXPECT_EQ(dev.ref_fallback, "");
  EXPECT_EQ(dev.ref[0], cpu.ref[0] + 1000);  // the device function's output was kept
  EXPECT_EQ(dev.device_check, nullptr);
  EXPECT_EQ(dev.device_check_none, "kept nowhere");  // why the check runs on the host

  const HostData fell = make_host_data(p, 3, &failing_device_reference);
  EXPECT_EQ(fell.ref_device, "cpu");
  EXPECT_EQ(fell.ref_fallback, "out of memory");
  EXPECT_EQ(fell.ref, cpu.ref);
  EXPECT_EQ(fell.ref_rms, cpu.ref_rms);
}

}  // namespace
}  // namespace conv
