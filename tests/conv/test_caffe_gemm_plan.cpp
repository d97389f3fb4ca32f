// Variant 9's GEMM plan (conv/cuda/caffe_gemm_plan.hpp), checked on the CPU: the column buffer
// built as variant 5's im2col writes it (col[group][m][Kp], the padding poisoned with NaN so that
// reading it fails), the plan run as cuBLASLt would run it (column-major, op(A) and op(B), every
// call of the host loop and every matrix of the strided batch, in float64), must write every
// output element exactly once, in the problem's layout, equal to the float64 reference, for
// groups, stride, dilation, padding, both layouts and both element sizes.
#include "conv/cuda/caffe_gemm_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "conv/data.hpp"
#include "conv/problem.hpp"

namespace conv {
namespace {

std::vector<Problem> problems() {
  std::vector<Problem> out;
  for (const char* text :
       {"mb2ic4ih9oc8kh3", "mb2ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1", "g4mb1ic8ih13oc8kh3ph1dh1",
        "g8mb2ic8ih10oc8kh3ph1", "mb1ic5ih7iw11oc3kh2kw4sh3sw2ph1pw3dh1", "mb3ic2ih5oc4kh1",
        "g2mb2ic6ih8iw8oc4kh5kw5sh2sw2ph2pw2dw1", "mb1ic1ih1oc1kh1", "g3mb5ic6ih6oc9kh3ph1",
        "g2mb1ic4ih7oc6kh3"})
    out.push_back(parse_problem(text));
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < 24) {
    Problem p;
    p.g = pick(1, 4);
    p.mb = pick(1, 4);
    p.ic = p.g * pick(1, 5);
    p.oc = p.g * pick(1, 5);
    p.ih = pick(3, 10);
    p.iw = pick(3, 10);
    p.kh = pick(1, 4);
    p.kw = pick(1, 4);
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.dh = pick(0, 2);  // benchdnn: 0 = dense
    p.dw = pick(0, 2);
    p.ph = pick(0, p.kh);
    p.pw = pick(0, p.kw);
    if (p.validate().empty()) out.push_back(p);
  }
  std::vector<Problem> both;
  for (Problem p : out)
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      p.layout = layout;
      both.push_back(p);
    }
  return both;
}

// Element (r, c) of the matrix op(X) of operand o, whose matrix starts at `start` in `buffer`;
// fails the test on a read outside the buffer.
double op_element(const CaffeOperand& o, const std::vector<double>& buffer, std::int64_t start,
                  std::int64_t r, std::int64_t c) {
  const std::int64_t row = o.transposed ? c : r, col = o.transposed ? r : c;
  EXPECT_LT(row, o.rows);
  EXPECT_LT(col, o.cols);
  const std::int64_t at = start + row + col * o.ld;
  EXPECT_GE(at, 0);
  EXPECT_LT(at, std::int64_t(buffer.size()));
  if (at < 0 || at >= std::int64_t(buffer.size())) return std::nan("");
  return buffer[std::size_t(at)];
}

TEST(CaffeGemmPlan, RunAsCublasLtWouldItWritesTheReferenceOnceInTheLayout) {
  for (const Problem& p : problems())
    for (int bytes : {4, 2}) {
      SCOPED_TRACE(p.str() + " " + std::to_string(bytes) + "-byte values");
      ASSERT_EQ(im2col_index_limits(p), "");
      const Im2colGeometry g = make_im2col_geometry(p);
      const CaffeGemmPlan plan = plan_caffe_gemm(g, bytes);
      const HostData data = make_host_data(p, 3);

      // The buffers: columns as variant 5 lays them out, weights, the output poisoned.
      const double nan = std::numeric_limits<double>::quiet_NaN();
      std::vector<double> col(std::size_t(caffe_buffer_elements(g, bytes, CaffeBuffer::columns)),
                              nan);
      ASSERT_EQ(plan.kp, mma_padded_k(g.k, bytes));
      for (int group = 0; group < g.groups; ++group)
        for (int m = 0; m < g.m; ++m)
          for (int k = 0; k < g.k; ++k) {
            const std::int64_t off = im2col_src_offset(g, group, k, m);
            col[std::size_t(mma_column_buffer_offset(g, plan.kp, group, m, k))] =
                off < 0 ? 0.0 : double(data.src[std::size_t(off)]);
          }
      const std::vector<double> wei(data.wei.begin(), data.wei.end());
      ASSERT_EQ(std::int64_t(wei.size()), caffe_buffer_elements(g, bytes, CaffeBuffer::weights));
      std::vector<double> out(std::size_t(p.dst_elements()), nan);
      ASSERT_EQ(std::int64_t(out.size()), caffe_buffer_elements(g, bytes, CaffeBuffer::output));
      std::vector<int> writes(out.size(), 0);

      // The shapes cuBLASLt is given agree: op(A) m x k, op(B) k x n, D m x n, ld >= rows.
      auto op_rows = [](const CaffeOperand& o) { return o.transposed ? o.cols : o.rows; };
      auto op_cols = [](const CaffeOperand& o) { return o.transposed ? o.rows : o.cols; };
      ASSERT_EQ(op_rows(plan.a), plan.m);
      ASSERT_EQ(op_cols(plan.a), plan.k);
      ASSERT_EQ(op_rows(plan.b), plan.k);
      ASSERT_EQ(op_cols(plan.b), plan.n);
      ASSERT_EQ(plan.d.rows, plan.m);
      ASSERT_EQ(plan.d.cols, plan.n);
      for (const CaffeOperand* o : {&plan.a, &plan.b, &plan.d}) ASSERT_GE(o->ld, o->rows);
      ASSERT_NE(plan.a.buffer, plan.b.buffer);
      ASSERT_NE(plan.a.buffer, CaffeBuffer::output);
      ASSERT_NE(plan.b.buffer, CaffeBuffer::output);
      auto buffer = [&](const CaffeOperand& o) -> const std::vector<double>& {
        return o.buffer == CaffeBuffer::weights ? wei : col;
      };

      for (int c = 0; c < plan.calls; ++c)
        for (int b = 0; b < plan.batch; ++b) {
          auto start = [&](const CaffeOperand& o) {
            return c * o.call_stride + b * o.batch_stride;
          };
          for (std::int64_t i = 0; i < plan.m; ++i)
            for (std::int64_t j = 0; j < plan.n; ++j) {
              double sum = 0;
              for (std::int64_t l = 0; l < plan.k; ++l)
                sum += op_element(plan.a, buffer(plan.a), start(plan.a), i, l) *
                       op_element(plan.b, buffer(plan.b), start(plan.b), l, j);
              const std::int64_t at = start(plan.d) + i + j * plan.d.ld;
              ASSERT_GE(at, 0);
              ASSERT_LT(at, std::int64_t(out.size()));
              out[std::size_t(at)] = sum;
              ++writes[std::size_t(at)];
            }
        }

      int wrong = 0;
      for (std::size_t i = 0; i < out.size() && wrong < 5; ++i) {
        const double ref = data.ref[i];
        if (writes[i] != 1 || !(std::abs(out[i] - ref) <= 1e-9 * (1 + std::abs(ref)))) {
          ADD_FAILURE() << "output " << i << ": " << out[i] << " written " << writes[i]
                        << " times, reference " << ref;
          ++wrong;
        }
      }
    }
}

// One call where one strided batch covers the convolution; the host loop only in nchw with
// both groups and images, over the smaller of the two.
TEST(CaffeGemmPlan, BatchesOverWhatOneCallCanCover) {
  struct Expect {
    const char* problem;
    Layout layout;
    int batch, calls;
    const char *batch_over, *calls_over;
  };
  for (const Expect& e : {
           Expect{"mb8ic4ih9oc8kh3", Layout::nchw, 8, 1, "images", ""},
           Expect{"mb8ic4ih9oc8kh3", Layout::nhwc, 1, 1, "", ""},
           Expect{"mb1ic4ih9oc8kh3", Layout::nchw, 1, 1, "", ""},
           Expect{"g4mb8ic8ih9oc8kh3", Layout::nhwc, 4, 1, "groups", ""},
           Expect{"g4mb8ic8ih9oc8kh3", Layout::nchw, 8, 4, "images", "groups"},
           Expect{"g8mb2ic8ih9oc8kh3", Layout::nchw, 8, 2, "groups", "images"},
           Expect{"g8mb1ic8ih9oc8kh3", Layout::nchw, 8, 1, "groups", ""},
       }) {
    Problem p = parse_problem(e.problem);
    p.layout = e.layout;
    const CaffeGemmPlan plan = plan_caffe_gemm(make_im2col_geometry(p), 2);
    SCOPED_TRACE(p.str() + ": " + caffe_batching_text(plan));
    EXPECT_EQ(plan.batch, e.batch);
    EXPECT_EQ(plan.calls, e.calls);
    EXPECT_EQ(plan.batch_over, e.batch_over);
    EXPECT_EQ(plan.calls_over, e.calls_over);
    // Both operands k-contiguous (TN): the columns' Kp and the weights' K are the lds of the
    // transposed or k-major operand.
    EXPECT_TRUE(plan.a.transposed);
    EXPECT_FALSE(plan.b.transposed);
  }
  Problem p = parse_problem("g4mb8ic8ih9oc8kh3");
  EXPECT_EQ(caffe_batching_text(plan_caffe_gemm(make_im2col_geometry(p), 2)),
            "4 calls (host loop over groups) of a strided batch of 8 (images)");
  p.layout = Layout::nhwc;
  EXPECT_EQ(caffe_batching_text(plan_caffe_gemm(make_im2col_geometry(p), 2)),
            "1 call of a strided batch of 4 (groups)");
}

// The alignment told to cuBLASLt divides every matrix start, and is the largest such power of
// two up to 256.
TEST(CaffeGemmPlan, AlignmentIsTheLargestPowerOfTwoDividingEveryStart) {
  for (const Problem& p : problems())
    for (int bytes : {4, 2}) {
      const CaffeGemmPlan plan = plan_caffe_gemm(make_im2col_geometry(p), bytes);
      for (const CaffeOperand* o : {&plan.a, &plan.b, &plan.d}) {
        const std::uint32_t align = caffe_operand_alignment(*o, plan, bytes);
        SCOPED_TRACE(p.str() + " " + std::to_string(bytes) + " bytes: " + std::to_string(align));
        ASSERT_GT(align, 0u);
        EXPECT_EQ(align & (align - 1), 0u);
        EXPECT_LE(align, 256u);
        bool all_divide_double = true;
        for (int c = 0; c < plan.calls; ++c)
          for (int b = 0; b < plan.batch; ++b) {
            const std::int64_t start = (c * o->call_stride + b * o->batch_stride) * bytes;
            EXPECT_EQ(start % align, 0);
            all_divide_double = all_divide_double && start % (2 * align) == 0;
          }
        if (align < 256) {
          EXPECT_FALSE(all_divide_double);
        }
      }
    }
  // nhwc with 3 output channels per group in fp16: the groups' outputs start 6 bytes apart.
  Problem p = parse_problem("g2mb2ic4ih9oc6kh3");
  p.layout = Layout::nhwc;
  const CaffeGemmPlan plan = plan_caffe_gemm(make_im2col_geometry(p), 2);
  EXPECT_EQ(caffe_operand_alignment(plan.d, plan, 2), 2u);
  EXPECT_EQ(caffe_operand_alignment(plan.d, plan, 4), 4u);
}

}  // namespace
}  // namespace conv
