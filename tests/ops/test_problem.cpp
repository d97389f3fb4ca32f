#include "ops/problem.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/common/case_helpers.hpp"

namespace ops {
namespace {

std::string why_rejected(const std::string& d) {
  return bench::testing::why_rejected_by([](const std::string& s) { parse_problem(s); }, d);
}

TEST(OpsProblem, DescriptorsRoundTrip) {
  const char* descriptors[] = {
      "add:4096x4096",
      "add:4096x4096+1x4096:fp16",
      "div:64x128+64x1:bf16",
      "mul:32x32+1x1",
      "gelu_tanh:16777216",
      "sum:4x512x896:axis=2",
      "max:4x512x896:axis=0,1",
      "mean:4x512x896",
      "softmax:4x512x896:bf16",
      "layernorm:8x1024x896",
      "rmsnorm:8x1024x896:fp16",
      "matmul:m4096n4096k4096:bf16",
      "matmul:b8m512n512k64:tf32",
      "copy:16777216",
      "transpose:8192x8192",
      "transpose:8x512x896",
      "permute:8x16x32:perm=2,0,1",
      "concat:4096x4096:inputs=3:axis=1",
  };
  for (const char* d : descriptors) {
    const Problem p = parse_problem(d);
    EXPECT_EQ(p.str(), d);
    EXPECT_EQ(parse_problem(p.str()), p);
  }
}

TEST(OpsProblem, CanonicalForms) {
  // Negative axes count from the end; every axis is no axis (all); a same-shape second operand
  // is no broadcast; written defaults disappear; names may hold ':'.
  EXPECT_EQ(parse_problem("sum:4x512x896:axis=-1").str(), "sum:4x512x896:axis=2");
  EXPECT_EQ(parse_problem("sum:4x512x896:axis=2,0,1").str(), "sum:4x512x896");
  EXPECT_EQ(parse_problem("add:8x8+8x8:fp32").str(), "add:8x8");
  EXPECT_EQ(parse_problem("matmul:k64n32m16b1").str(), "matmul:m16n32k64");
  EXPECT_EQ(parse_problem("concat:8x8:axis=-2:inputs=2").str(), "concat:8x8");
  const Problem named = parse_problem("add:8x8:n\"qwen2:mlp add\"");
  EXPECT_EQ(named.name, "qwen2:mlp add");
  EXPECT_EQ(named.str_with_name(), "add:8x8:n\"qwen2:mlp add\"");
  Problem defaults;
  defaults.dtype = DataType::bf16;
  EXPECT_EQ(parse_problem("relu:1024", defaults).dtype, DataType::bf16);
  EXPECT_EQ(parse_problem("relu:1024:fp32", defaults).dtype, DataType::fp32);
}

TEST(OpsProblem, BadDescriptorsSayWhy) {
  struct Case {
    const char* text;
    const char* word;
  } cases[] = {{"", "an op and a shape"},
               {"frobnicate:8", "unknown op"},
               {"add", "an op and a shape"},
               {"add:8x0", "at least 1"},
               {"add:8xx8", "needs a number"},
               {"add:8x8+4x8", "does not broadcast"},
               {"add:8x8+8", "needs the first's 2 dimensions"},
               {"relu:8+8", "only element ops"},
               {"relu:8:tf32", "tf32 is a matmul mode"},
               {"sum:4x8:axis=2", "outside the shape"},
               {"sum:4x8:axis=0,0", "given twice"},
               {"softmax:4x8:axis=0", "does not apply"},
               {"transpose:8", "at least 2 dimensions"},
               {"permute:8x8x8", "needs perm"},
               {"permute:8x8x8:perm=0,0,1", "order all 3 axes"},
               {"concat:8x8:inputs=1", "2 to 64"},
               {"matmul:m8n8", "needs m, n and k"},
               {"matmul:m8n8k8q2", "unknown matmul size"},
               {"matmul:m8m8n8k8", "given twice"},
               {"add:8x8:fp64", "unknown field"},
               {"add:8x8:fp16:bf16", "two dtypes"},
               {"add:99999999999999x8", "too large"},
               {"add:1048576x1048576x2", "2^40"},
               {"add:8x8:n\"open", "unterminated name"}};
  for (const auto& c : cases)
    EXPECT_NE(why_rejected(c.text).find(c.word), std::string::npos)
        << c.text << ": " << why_rejected(c.text);
}

TEST(OpsProblem, OutputShapesAndWork) {
  const Problem s = parse_problem("sum:4x512x896:axis=1");
  EXPECT_EQ(s.output_shape(), (std::vector<std::int64_t>{4, 896}));
  EXPECT_EQ(parse_problem("mean:4x512x896").output_shape(), std::vector<std::int64_t>{});
  EXPECT_EQ(parse_problem("mean:4x512x896").output_elements(), 1);
  EXPECT_EQ(parse_problem("transpose:8x512x896").output_shape(),
            (std::vector<std::int64_t>{8, 896, 512}));
  EXPECT_EQ(parse_problem("permute:8x16x32:perm=2,0,1").output_shape(),
            (std::vector<std::int64_t>{32, 8, 16}));
  EXPECT_EQ(parse_problem("concat:4x6:inputs=3:axis=1").output_shape(),
            (std::vector<std::int64_t>{4, 18}));
  EXPECT_EQ(parse_problem("matmul:b8m16n32k64").output_shape(),
            (std::vector<std::int64_t>{8, 16, 32}));

  // Bytes per the dtype's storage (Genesis counted 4 per element whatever the dtype).
  EXPECT_DOUBLE_EQ(parse_problem("add:1024x1024:bf16").bytes(), 3.0 * 1024 * 1024 * 2);
  EXPECT_DOUBLE_EQ(parse_problem("add:1024x1024+1x1024").bytes(), (2.0 * 1024 * 1024 + 1024) * 4);
  EXPECT_DOUBLE_EQ(parse_problem("relu:1000:fp16").bytes(), 2.0 * 1000 * 2);
  EXPECT_DOUBLE_EQ(s.bytes(), (4.0 * 512 * 896 + 4 * 896) * 4);
  EXPECT_DOUBLE_EQ(parse_problem("layernorm:10x100").bytes(), (2.0 * 1000 + 200) * 4);
  EXPECT_DOUBLE_EQ(parse_problem("transpose:8192x8192").bytes(), 2.0 * 8192 * 8192 * 4);
  EXPECT_DOUBLE_EQ(parse_problem("concat:4x6:inputs=3").bytes(), 2.0 * 3 * 24 * 4);
  const Problem mm = parse_problem("matmul:b2m16n32k64:bf16");
  EXPECT_DOUBLE_EQ(mm.flops(), 2.0 * 2 * 16 * 32 * 64);
  EXPECT_DOUBLE_EQ(mm.bytes(), 2.0 * (16 * 64 + 64 * 32 + 16 * 32) * 2);
  EXPECT_EQ(parse_problem("copy:100").flops(), 0);
  EXPECT_EQ(mm.params()["m"], 16);
  EXPECT_EQ(s.params()["axes"], (std::vector<int>{1}));
  EXPECT_EQ(s.params()["category"], "reduction");
}

TEST(OpsProblem, EveryOpHasACategoryAndAName) {
  EXPECT_EQ(all_ops().size(), 21u);
  for (Op op : all_ops()) EXPECT_EQ(parse_op(to_string(op)), op);
  EXPECT_EQ(category_of(Op::gelu_erf), Category::activation);
  EXPECT_EQ(parse_category("normalization"), Category::normalization);
  EXPECT_THROW(parse_category("misc"), bench::UsageError);
}

}  // namespace
}  // namespace ops
