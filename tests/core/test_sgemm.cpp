// The GEMM engine's strict-FP32 SGEMMs (core/cuda/gemm/sgemm.cu) called directly:
//   - on the CPU: the plan (the configurations' ids, split-K by the rule and forced, clamped by
//     the k slices) and the workspace it needs;
//   - on the GPU, the MLP's tiles (64 x 64 and 32 x 32), without and with split-K (3 splits), on
//     each operand layout the MLP's step uses (A row-major or M-major, B row-major or K-major),
//     with every epilogue (identity, bias, bias + GELU erf and tanh, residual on C itself, bias +
//     GELU erf keeping the pre-activation, dGELU with column sums added to a vector that starts at
//     1), against a float64 reference written here, with the fp32 tolerance; m, n and k odd and
//     not multiples of the tile, n % 4 != 0 (copies value by value), batches. Every output
//     poisoned with NaN first;
//   - what it refuses: the op suite's configurations with an epilogue or a transposed operand,
//     both operands transposed, a missing epilogue tensor.
// The GPU part is skipped, with the reason, without a GPU of compute capability 8.0 or newer.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/gemm/sgemm.hpp"
#include "ops/data.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/ops/own_cuda_checks.hpp"
#include "tests/ops/random_ops.hpp"

namespace ops {
namespace {

namespace gemm = bench::gemm;
using gemm::EpilogueKind;

TEST(SgemmPlan, ConfigurationsAndSplits) {
  EXPECT_EQ(gemm::sgemm_index(15), -1);  // 3xTF32 is no SGEMM
  EXPECT_EQ(gemm::kSgemmConfigs[gemm::sgemm_index(64)].bm, 64);
  EXPECT_EQ(gemm::kSgemmConfigs[gemm::sgemm_index(32)].bn, 32);
  gemm::SgemmShape s;
  s.m = s.n = 256;
  s.k = 1024;  // 64 slices of 16
  // Configuration 12 (128 x 128, 2 blocks/SM): 4 tiles on 132 SMs split, each split 8 slices.
  const gemm::SgemmPlan rule = gemm::sgemm_plan(s, 12, 132);
  EXPECT_EQ(rule.tiles, 4);
  EXPECT_EQ(rule.splits, 8);
  EXPECT_EQ(gemm::sgemm_workspace_bytes(s, rule), std::size_t(8 * 256 * 256 * 4));
  EXPECT_EQ(gemm::sgemm_plan(s, 64, 132, 8, 3).splits, 3);     // forced
  EXPECT_EQ(gemm::sgemm_plan(s, 32, 132, 8, 1).splits, 1);     // forced off
  EXPECT_EQ(gemm::sgemm_plan(s, 32, 132, 8, 999).splits, 64);  // at most the slices
  EXPECT_EQ(gemm::sgemm_workspace_bytes(s, gemm::sgemm_plan(s, 32, 132, 8, 1)), 0u);
  s.m = s.n = 8192;
  EXPECT_EQ(gemm::sgemm_plan(s, 18, 132).splits, 1);  // tiles enough
  EXPECT_THROW(gemm::sgemm_plan(s, 15, 132), std::logic_error);
}

std::string sgemm_device_unavailable_reason() {
  return testing::compute_capability_unavailable_reason(
      8, "needs cp.async (compute capability 8.0 or newer)");
}

TEST(Sgemm, EpiloguesAndLayoutsMatchTheReference) {
  MYCONV_SKIP_IF(sgemm_device_unavailable_reason());
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  bench::Stream stream;
  std::mt19937 rng(26);
  std::uniform_real_distribution<float> uniform(-1, 1);
  auto random = [&](std::int64_t count) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = 2 * uniform(rng);
    return v;
  };
  auto upload = [&](const std::vector<float>& v) {
    bench::DeviceBuffer<float> d(v.size());
    d.upload_async(v.data(), stream.get());
    stream.synchronize();
    return d;
  };
  auto download = [&](const bench::DeviceBuffer<float>& d) {
    std::vector<float> out(d.size());
    d.download_async(out.data(), stream.get());
    stream.synchronize();
    return out;
  };
  auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  auto gelu_tanh = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  auto gelu_grad = [](double x) {
    return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  };
  const std::array kinds{EpilogueKind::identity,      EpilogueKind::bias,
                         EpilogueKind::bias_gelu_erf, EpilogueKind::bias_gelu_tanh,
                         EpilogueKind::residual,      EpilogueKind::bias_gelu_erf_aux,
                         EpilogueKind::dgelu_erf};
  for (const auto& [batch, m, n, k] :
       {std::array<std::int64_t, 4>{1, 61, 70, 37}, std::array<std::int64_t, 4>{2, 130, 132, 300},
        std::array<std::int64_t, 4>{1, 200, 96, 1001}}) {
    const Problem p = testing::matmul_problem(batch, m, n, k, DataType::fp32);
    const std::size_t mn = std::size_t(batch * m * n);
    const std::vector<float> a = random(batch * m * k), b = random(batch * k * n), bias = random(n),
                             res = random(std::int64_t(mn)), z = random(std::int64_t(mn));
    const auto da = upload(a), db = upload(b), dbias = upload(bias), dz = upload(z);
    bench::DeviceBuffer<float> dc(mn), daux(mn), dsums{std::size_t(n)}, dw(3 * mn);
    for (const auto& [a_m_major, b_k_major] :
         {std::array{false, false}, std::array{false, true}, std::array{true, false}}) {
      // A's element (r, l) of batch bz: [m][k] or, M-major, [k][m]; B's (l, j): [k][n] or [n][k].
      std::vector<double> product(mn, 0.0);
      for (std::int64_t bz = 0; bz < batch; ++bz)
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t l = 0; l < k; ++l) {
            const double ail = a[std::size_t(bz * m * k + (a_m_major ? l * m + r : r * k + l))];
            for (std::int64_t j = 0; j < n; ++j)
              product[std::size_t((bz * m + r) * n + j)] +=
                  ail * b[std::size_t(bz * k * n + (b_k_major ? j * k + l : l * n + j))];
          }
      gemm::SgemmShape s;
      s.batch = batch, s.m = m, s.n = n, s.k = k;
      s.a_m_major = a_m_major, s.b_k_major = b_k_major;
      for (const auto& [tile, splits] :
           {std::array{64, 1}, std::array{64, 3}, std::array{32, 1}, std::array{32, 3}})
        for (const EpilogueKind kind : kinds) {
          SCOPED_TRACE(p.str() + (a_m_major ? " A M-major" : "") + (b_k_major ? " B K-major" : "") +
                       " tile " + std::to_string(tile) + " splits " + std::to_string(splits) +
                       " epilogue " + std::to_string(int(kind)));
          const gemm::SgemmPlan plan = gemm::sgemm_plan(s, tile, sms, 8, splits);
          ASSERT_EQ(plan.splits, splits);
          ASSERT_LE(gemm::sgemm_workspace_bytes(s, plan), dw.bytes());
          dc.fill_bytes_async(0xFF, stream.get());
          daux.fill_bytes_async(0xFF, stream.get());
          dw.fill_bytes_async(0xFF, stream.get());
          if (kind == EpilogueKind::residual) dc.upload_async(res.data(), stream.get());
          if (kind == EpilogueKind::dgelu_erf) daux.upload_async(z.data(), stream.get());
          const std::vector<float> ones(std::size_t(n), 1.0f);
          dsums.upload_async(ones.data(), stream.get());
          gemm::Epilogue e;
          e.kind = kind;
          e.bias = dbias.data();
          e.residual = dc.data();  // C += A B
          e.aux = daux.data();
          e.column_sums = dsums.data();
          gemm::sgemm(s, plan, da.data(), db.data(), dc.data(), e, dw.data(), stream.get());
          ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
          std::vector<double> want(mn), want_aux(mn), want_sums(std::size_t(n), 1.0);
          for (std::size_t i = 0; i < mn; ++i) {
            const std::size_t j = i % std::size_t(n);
            const double v = product[i], pre = v + bias[j];
            switch (kind) {
              case EpilogueKind::identity:
                want[i] = v;
                break;
              case EpilogueKind::bias:
                want[i] = pre;
                break;
              case EpilogueKind::bias_gelu_erf:
                want[i] = gelu(pre);
                break;
              case EpilogueKind::bias_gelu_tanh:
                want[i] = gelu_tanh(pre);
                break;
              case EpilogueKind::residual:
                want[i] = v + res[i];
                break;
              case EpilogueKind::bias_gelu_erf_aux:
                want[i] = gelu(pre);
                want_aux[i] = pre;
                break;
              case EpilogueKind::dgelu_erf:
                want[i] = v * gelu_grad(z[i]);
                want_sums[j] += want[i];
                break;
            }
          }
          auto expect_close = [&](const std::vector<float>& got, const std::vector<double>& ref,
                                  const char* what) {
            const bench::Correctness c =
                bench::compare(got.data(), ref.data(), got.size(),
                               tolerance(p, bench::rms(ref.data(), ref.size())));
            EXPECT_TRUE(c.passed) << what << ": " << c.message;
            EXPECT_EQ(c.non_finite, 0u) << what;
          };
          expect_close(download(dc), want, "C");
          if (kind == EpilogueKind::bias_gelu_erf_aux)
            expect_close(download(daux), want_aux, "aux");
          if (kind == EpilogueKind::dgelu_erf)
            expect_close(download(dsums), want_sums, "column sums");
          else
            EXPECT_EQ(download(dsums), ones) << "column sums written by another epilogue";
        }
    }
  }
}

TEST(Sgemm, RefusesWhatIsNotBuilt) {
  gemm::SgemmShape s;
  s.m = s.n = s.k = 64;
  s.a_m_major = s.b_k_major = true;
  EXPECT_NE(gemm::sgemm_unsupported_reason(s, EpilogueKind::identity), "");
  MYCONV_SKIP_IF(sgemm_device_unavailable_reason());
  bench::DeviceBuffer<float> x(64 * 64), y(64 * 64), c(64 * 64);
  s.a_m_major = false;
  EXPECT_EQ(gemm::sgemm_unsupported_reason(s, EpilogueKind::identity), "");
  gemm::Epilogue bias;
  bias.kind = EpilogueKind::bias;  // no bias tensor
  EXPECT_THROW(gemm::sgemm(s, gemm::sgemm_plan(s, 64, 132), x.data(), y.data(), c.data(), bias,
                           nullptr, nullptr),
               std::invalid_argument);
  // Configuration 12 is the op suite's: row-major, the identity.
  EXPECT_THROW(gemm::sgemm(s, gemm::sgemm_plan(s, 12, 132, 8, 1), x.data(), y.data(), c.data(),
                           gemm::Epilogue{}, nullptr, nullptr),
               std::invalid_argument);
  s.b_k_major = false;
  bias.bias = y.data();
  EXPECT_THROW(gemm::sgemm(s, gemm::sgemm_plan(s, 12, 132, 8, 1), x.data(), y.data(), c.data(),
                           bias, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(gemm::sgemm(s, gemm::sgemm_plan(s, 12, 132, 8, 1), x.data(), y.data(), c.data(),
                              gemm::Epilogue{}, nullptr, nullptr));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace ops
