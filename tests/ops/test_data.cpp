// The op suite's inputs and float64 reference, against values worked out by hand and against the
// identities each op must keep (softmax rows sum to one, layernorm rows have mean 0, a transpose of
// a transpose is the input...).
#include "ops/data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace ops {
namespace {

std::vector<double> ref(const std::string& d, const std::vector<std::vector<float>>& in) {
  return reference(parse_problem(d), in);
}

TEST(OpsReference, HandWorkedValues) {
  EXPECT_EQ(ref("add:2x3+1x3", {{1, 2, 3, 4, 5, 6}, {10, 20, 30}}),
            (std::vector<double>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(ref("sub:2x3+2x1", {{1, 2, 3, 4, 5, 6}, {1, 2}}),
            (std::vector<double>{0, 1, 2, 2, 3, 4}));
  EXPECT_EQ(ref("div:2x2+1x1", {{1, 2, 3, 4}, {2}}), (std::vector<double>{0.5, 1, 1.5, 2}));
  EXPECT_EQ(ref("relu:3", {{-1, 0, 2}}), (std::vector<double>{0, 0, 2}));
  EXPECT_NEAR(ref("gelu_erf:1", {{1}})[0], 0.8413447460685429, 1e-15);
  EXPECT_NEAR(ref("gelu_tanh:1", {{1}})[0], 0.8411919906082768, 1e-15);
  EXPECT_NEAR(ref("silu:1", {{1}})[0], 0.7310585786300049, 1e-15);
  EXPECT_NEAR(ref("sigmoid:1", {{0}})[0], 0.5, 1e-15);
  EXPECT_EQ(ref("sum:2x3:axis=1", {{1, 2, 3, 4, 5, 6}}), (std::vector<double>{6, 15}));
  EXPECT_EQ(ref("sum:2x3:axis=0", {{1, 2, 3, 4, 5, 6}}), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(ref("max:2x3", {{1, 9, 3, 4, 5, 6}}), (std::vector<double>{9}));
  EXPECT_EQ(ref("mean:2x2x2:axis=0,2", {{1, 2, 3, 4, 5, 6, 7, 8}}),
            (std::vector<double>{3.5, 5.5}));
  EXPECT_EQ(ref("matmul:m2n2k3", {{1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}}),
            (std::vector<double>{4, 5, 10, 11}));
  EXPECT_EQ(ref("transpose:2x3", {{1, 2, 3, 4, 5, 6}}), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // permute 2x3x2 by (2,0,1): out[k][i][j] = in[i][j][k]
  EXPECT_EQ(ref("permute:2x3x2:perm=2,0,1", {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}),
            (std::vector<double>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(ref("concat:2x2:axis=1", {{1, 2, 3, 4}, {5, 6, 7, 8}}),
            (std::vector<double>{1, 2, 5, 6, 3, 4, 7, 8}));
  EXPECT_EQ(ref("concat:2x2", {{1, 2, 3, 4}, {5, 6, 7, 8}}),
            (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(OpsReference, NormalizationIdentities) {
  const Problem sm = parse_problem("softmax:3x50");
  const HostData d = make_host_data(sm, 1);
  for (int r = 0; r < 3; ++r)
    EXPECT_NEAR(std::accumulate(d.ref.begin() + r * 50, d.ref.begin() + (r + 1) * 50, 0.0), 1.0,
                1e-12);
  // layernorm with weight 1 and bias 0: each row has mean 0 and variance 1 (less the eps).
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[std::size_t(i)] = float(i % 7) - 3.0f;
  const std::vector<double> y =
      ref("layernorm:2x32", {x, std::vector<float>(32, 1.0f), std::vector<float>(32, 0.0f)});
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 32; ++c) mean += y[std::size_t(r * 32 + c)];
    for (int c = 0; c < 32; ++c) var += std::pow(y[std::size_t(r * 32 + c)] - mean / 32, 2);
    EXPECT_NEAR(mean / 32, 0, 1e-12);
    EXPECT_NEAR(var / 32, 1, 1e-4);
  }
  const std::vector<double> z = ref("rmsnorm:1x4", {{2, -2, 2, -2}, {1, 1, 1, 1}});
  EXPECT_NEAR(z[0], 2 / std::sqrt(4 + 1e-5), 1e-12);
}

TEST(OpsData, InputsAreRandomNonZeroAndInTheirDtype) {
  for (const char* d : {"add:64x64+1x64:bf16", "div:256", "gelu_erf:1000:fp16", "layernorm:4x96",
                        "matmul:b2m8n16k32", "concat:8x8:inputs=3", "sum:8x8x8:axis=1"}) {
    const Problem p = parse_problem(d);
    const HostData data = make_host_data(p, 3);
    ASSERT_FALSE(data.inputs.empty()) << d;
    for (const auto& in : data.inputs) {
      ASSERT_FALSE(in.empty()) << d;
      EXPECT_NE(std::count(in.begin(), in.end(), 0.0f), std::ptrdiff_t(in.size())) << d;
      for (float v : in) EXPECT_EQ(bench::round_to(p.dtype, v), v) << d;
    }
    EXPECT_EQ(data.ref.size(), std::size_t(p.output_elements())) << d;
    EXPECT_GT(data.ref_rms, 0) << d;
    // The same problem and seed give the same data; another seed other data.
    EXPECT_EQ(make_host_data(p, 3).inputs, data.inputs) << d;
    EXPECT_NE(make_host_data(p, 4).inputs, data.inputs) << d;
  }
  // (Held in a variable: a range-for over inputs[1] of a temporary would read freed memory.)
  const HostData div = make_host_data(parse_problem("div:1000+1000"), 1);
  for (float v : div.inputs[1]) EXPECT_GE(std::fabs(v), 0.5f);
}

TEST(OpsData, TolerancesFollowTheOp) {
  EXPECT_EQ(tolerance(parse_problem("transpose:8x8"), 1).rtol, 0);
  EXPECT_EQ(tolerance(parse_problem("max:8x8"), 1).atol, 0);
  EXPECT_GT(tolerance(parse_problem("add:8:bf16"), 1).rtol,
            tolerance(parse_problem("add:8"), 1).rtol);
  // A longer sum allows more accumulated rounding.
  EXPECT_GT(tolerance(parse_problem("sum:4096"), 1).atol,
            tolerance(parse_problem("sum:16"), 1).atol);
}

}  // namespace
}  // namespace ops
