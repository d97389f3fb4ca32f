// The Hopper GEMM engine (core/cuda/gemm/gemm_sm90.cu) on the GPU, fp16 and bf16 (and tf32
// through variants 4-9: B transposed to K-major and rounded first), every output poisoned with NaN
// first:
//   - through own_cuda's matmul variant 4 (ops/cuda/matmul.cu) against the op suite's float64
//     reference (ops/data.cpp; 4096 sampled elements above 2^30 multiply-adds, and then every
//     output at least finite): odd m, n a multiple of 8 but not of the tile, k not a multiple of
//     64, batches, many tiles (2048^3), and randomized shapes;
//   - split-K by the rule (m <= 64) and variants 5-9 (split-K forced, off, each tile forced,
//     ping-pong) on odd shapes, through own_cuda;
//   - the engine itself with each tile width forced (128x128 and 128x256) and ping-pong, without
//     and with split-K (3 splits, or fewer where k has fewer blocks; on the cooperative tiles
//     summed by a second kernel, and on the 128-wide tile in the kernel, launched twice on the
//     counters the first launch left), and each epilogue (identity, bias,
//     bias + GELU erf and tanh, residual) on edge shapes, against a float64 reference written
//     here; the MLP's epilogues (bf16): bias + GELU with the pre-activation kept, on a K-major B,
//     and dGELU with its transposed copy and column sums, each tile (64 x 64 too), without and
//     with split-K (its splits summed by a second kernel, and in the kernel),
//     and through the small-tile path (mma.sync, both tiles);
//   - a GEMM launched with programmatic dependent launch behind the GEMM whose output it reads;
//   - the shapes it refuses (variant 4 not offered; variants 3 and 1 stay).
// Skipped, with the reason, without a compute capability 9.0 GPU or without the sm_90a build.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "core/dtype.hpp"
#include "ops/cuda/own_cuda.hpp"
#include "ops/data.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/ops/random_ops.hpp"

namespace ops {
namespace {

std::string engine_unusable_reason() {
  if (const std::string why = conv::testing::gpu_unavailable_reason(); !why.empty())
    return "needs a CUDA device: " + why;
  return bench::gemm::gemm_sm90_unusable_reason();
}
#define SKIP_WITHOUT_ENGINE() MYCONV_SKIP_IF(engine_unusable_reason())

using ops::testing::matmul_problem;

// Variant 4 (or one of 5-8, a choice of its rule forced) from a poisoned output, twice (the second
// call on the same buffers, poisoned again).
void check_variant4(const Problem& p, int variant = 4) {
  SCOPED_TRACE(p.str() + " variant " + std::to_string(variant));
  BackendOptions options;
  options.variant = std::to_string(variant);
  const auto backend = make_own_cuda_backend(options);
  const bench::Support support = backend->check_support(p);
  ASSERT_TRUE(support.ok) << support.reason;
  const HostData data = make_host_data(p, 11);
  const auto inst = backend->prepare(p, data);
  inst->compile();
  EXPECT_NE(inst->algorithm().find("v" + std::to_string(variant) + " wgmma"), std::string::npos)
      << inst->algorithm();
  const bench::testing::PoisonedRuns r =
      bench::testing::run_twice_after_poison(*inst, std::size_t(p.output_elements()));
  testing::expect_matches_reference(p, data, r.first, "call 0");
  testing::expect_matches_reference(p, data, r.second, "call 1");
}

TEST(GemmSm90, MatmulVariant4MatchesTheReference) {
  SKIP_WITHOUT_ENGINE();
  for (DataType dt : {DataType::fp16, DataType::bf16, DataType::tf32}) {
    check_variant4(matmul_problem(1, 1001, 264, 200, dt));  // odd m, n not of the tile, k not of 64
    check_variant4(matmul_problem(3, 77, 136, 72, dt));     // batches, tiles mostly past the edges
    check_variant4(matmul_problem(1, 1, 8, 8, dt));         // the smallest shape it takes
    check_variant4(matmul_problem(8, 512, 512, 512, dt));   // batched, the targets' shape
    check_variant4(matmul_problem(1, 8, 4096, 4096, dt));   // skinny: 128x128 tiles, long k
    check_variant4(matmul_problem(1, 2048, 2048, 2048, dt));  // many tiles, persistent blocks loop
    check_variant4(matmul_problem(1, 3000, 5000, 1000, dt));  // 128x256 tiles, edges in m and k
    std::mt19937 rng(26);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    for (int i = 0; i < 6; ++i)
      check_variant4(
          matmul_problem(pick(1, 3), 2 * pick(0, 400) + 1, 8 * pick(1, 90), 8 * pick(1, 70), dt));
  }
}

// Split-K by the rule (m <= 64, long k) and each forced choice (5 split-K, 6 none, 7 128x128,
// 8 128x256, 9 ping-pong) on odd shapes: m odd, n not of the tile, k not of 64, batches.
TEST(GemmSm90, SplitKAndForcedChoicesMatchTheReference) {
  SKIP_WITHOUT_ENGINE();
  for (DataType dt : {DataType::fp16, DataType::bf16, DataType::tf32}) {
    check_variant4(
        matmul_problem(1, 21, 1064, 8200, dt));  // split-K by the rule: 13 splits, k edge
    check_variant4(matmul_problem(1, 64, 4096, 4096, dt));  // 4 splits of 16 blocks
    for (int v : {5, 6, 7, 8, 9}) {
      check_variant4(matmul_problem(1, 37, 1064, 2504, dt), v);
      check_variant4(matmul_problem(3, 201, 392, 1000, dt), v);  // batches, 16 k blocks
      check_variant4(matmul_problem(1, 5, 8, 72, dt), v);        // two k blocks: splits of one
    }
    // Ping-pong with 2 to 4 tiles a block (either warpgroup last) and k not of 64.
    check_variant4(matmul_problem(1, 4095, 2040, 264, dt), 9);
    check_variant4(matmul_problem(3, 1000, 1000, 136, dt), 9);
  }
}

TEST(GemmSm90, ShapesItRefusesFallBackToVariant3) {
  SKIP_WITHOUT_ENGINE();
  const auto backend = make_own_cuda_backend(BackendOptions{});
  for (const Problem& p : {matmul_problem(1, 64, 64, 100, DataType::bf16),    // k % 8
                           matmul_problem(1, 64, 130, 64, DataType::fp16),    // n % 8
                           matmul_problem(1, 64, 64, 100, DataType::tf32),    // k % 8
                           matmul_problem(1, 64, 64, 64, DataType::fp32)}) {  // not 16-bit
    BackendOptions v4;
    v4.variant = "4";
    EXPECT_FALSE(make_own_cuda_backend(v4)->check_support(p).ok) << p.str();
    EXPECT_TRUE(backend->check_support(p).ok) << p.str();
  }
}

// The float64 result of epilogue e on the sums of A B (all of A, B, bias, residual as rounded to
// the dtype): what the engine must produce before its rounding.
std::vector<double> reference(const bench::gemm::GemmShape& s, const std::vector<float>& a,
                              const std::vector<float>& b, const std::vector<float>& bias,
                              const std::vector<float>& residual, bench::gemm::EpilogueKind e) {
  using bench::gemm::EpilogueKind;
  std::vector<double> c(std::size_t(s.batch * s.m * s.n), 0.0);
  for (std::int64_t z = 0; z < s.batch; ++z)
    for (std::int64_t i = 0; i < s.m; ++i) {
      double* row = c.data() + (z * s.m + i) * s.n;
      for (std::int64_t l = 0; l < s.k; ++l) {
        const double ail = a[std::size_t((z * s.m + i) * s.k + l)];
        const float* bl = b.data() + (z * s.k + l) * s.n;
        for (std::int64_t j = 0; j < s.n; ++j) row[j] += ail * bl[j];
      }
      for (std::int64_t j = 0; j < s.n; ++j) {
        double& v = row[j];
        if (e == EpilogueKind::residual) v += residual[std::size_t((z * s.m + i) * s.n + j)];
        if (e != EpilogueKind::identity && e != EpilogueKind::residual) v += bias[std::size_t(j)];
        if (e == EpilogueKind::bias_gelu_erf) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        if (e == EpilogueKind::bias_gelu_tanh)
          v = 0.5 * v *
              (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
      }
    }
  return c;
}

TEST(GemmSm90, BothTilesSplitKAndEveryEpilogueOnEdgeShapes) {
  SKIP_WITHOUT_ENGINE();
  using bench::gemm::EpilogueKind;
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  bench::Stream stream;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (DataType dt : {DataType::fp16, DataType::bf16})
    for (const bench::gemm::GemmShape s :
         {bench::gemm::GemmShape{1, 1001, 264, 200}, bench::gemm::GemmShape{3, 77, 136, 72},
          bench::gemm::GemmShape{2, 129, 520, 1000}}) {
      auto random = [&](std::int64_t count) {
        std::vector<float> v(static_cast<std::size_t>(count));
        for (float& x : v) x = bench::round_to(dt, uniform(rng));
        return v;
      };
      const std::vector<float> a = random(s.batch * s.m * s.k), b = random(s.batch * s.k * s.n),
                               bias = random(s.n), residual = random(s.batch * s.m * s.n);
      auto upload = [&](const std::vector<float>& v) {
        const std::vector<unsigned char> bytes = bench::to_storage_bytes(v, dt);
        bench::DeviceBuffer<unsigned char> d(bytes.size());
        d.upload_async(bytes.data(), stream.get());
        stream.synchronize();
        return d;
      };
      const auto da = upload(a), db = upload(b), dbias = upload(bias), dres = upload(residual);
      bench::DeviceBuffer<unsigned char> dc(std::size_t(s.batch * s.m * s.n) * 2);
      // Split-K's FP32 partials for up to 3 splits, and the tile counters after them.
      bench::DeviceBuffer<unsigned char> dw(std::size_t(3 * s.batch * s.m * s.n) * 4 + 4096);
      const Problem p = matmul_problem(s.batch, s.m, s.n, s.k, dt);
      for (int bn : {128, 256, 0})  // 0: ping-pong (128x128)
        for (int splits : {1, 3})
          for (bool in_kernel : {false, true}) {
            // The splits summed in the kernel (cooperative tiles): two launches, the second on
            // the counters the first left.
            if (in_kernel && (bn != 128 || splits == 1)) continue;
            for (EpilogueKind e :
                 {EpilogueKind::identity, EpilogueKind::bias, EpilogueKind::bias_gelu_erf,
                  EpilogueKind::bias_gelu_tanh, EpilogueKind::residual}) {
              SCOPED_TRACE(p.str() + (bn ? " BN " + std::to_string(bn) : " ping-pong") +
                           " splits " + std::to_string(splits) +
                           (in_kernel ? " summed in the kernel" : "") + " epilogue " +
                           std::to_string(int(e)));
              bench::gemm::GemmPlan plan =
                  bench::gemm::gemm_plan(s, sms, bn, splits,
                                         bn ? bench::gemm::GemmSchedule::cooperative
                                            : bench::gemm::GemmSchedule::pingpong);
              plan.reduce_in_kernel = in_kernel;
              ASSERT_EQ(plan.bn, bn ? bn : 128);
              ASSERT_EQ(plan.splits > 1, splits > 1);  // every shape here has 2 k blocks or more
              ASSERT_LE(bench::gemm::gemm_workspace_bytes(s, plan), dw.bytes());
              dw.fill_bytes_async(0xFF, stream.get());  // NaN partials: every one must be written
              bench::gemm::gemm_clear_counters(s, plan, dw.data(), stream.get());
              const bench::gemm::Epilogue epilogue{e, dbias.data(), dres.data()};
              for (int launch = 0; launch < (in_kernel ? 2 : 1); ++launch) {
                SCOPED_TRACE("launch " + std::to_string(launch));
                dc.fill_bytes_async(0xFF, stream.get());
                bench::gemm::gemm_sm90(
                    dt == DataType::fp16 ? bench::MmaDtype::fp16 : bench::MmaDtype::bf16, s, plan,
                    da.data(), db.data(), dc.data(), epilogue, dw.data(), stream.get());
                std::vector<unsigned char> bytes(dc.bytes());
                dc.download_async(bytes.data(), stream.get());
                stream.synchronize();
                std::vector<float> got(std::size_t(s.batch * s.m * s.n));
                bench::from_storage_bytes(bytes.data(), got.size(), dt, got.data());
                const std::vector<double> ref = reference(s, a, b, bias, residual, e);
                const bench::Correctness c =
                    bench::compare(got.data(), ref.data(), got.size(),
                                   tolerance(p, bench::rms(ref.data(), ref.size())));
                EXPECT_TRUE(c.passed) << c.message;
                EXPECT_EQ(c.non_finite, 0u);
              }
            }
          }
    }
}

// Tensors of dt for the engine's tests on one stream: random values in [-scale, scale) rounded
// to dt, and uploads and downloads of dt's storage, each synchronized.
struct EngineIo {
  DataType dt;
  bench::Stream& stream;
  std::mt19937 rng;
  float scale = 1.0f;
  std::vector<float> random(std::int64_t count) {
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = bench::round_to(dt, scale * uniform(rng));
    return v;
  }
  bench::DeviceBuffer<unsigned char> upload(const std::vector<float>& v) {
    const std::vector<unsigned char> bytes = bench::to_storage_bytes(v, dt);
    bench::DeviceBuffer<unsigned char> d(bytes.size());
    d.upload_async(bytes.data(), stream.get());
    stream.synchronize();
    return d;
  }
  std::vector<float> download(const bench::DeviceBuffer<unsigned char>& d, std::size_t count) {
    std::vector<unsigned char> bytes(d.bytes());
    d.download_async(bytes.data(), stream.get());
    stream.synchronize();
    std::vector<float> out(count);
    bench::from_storage_bytes(bytes.data(), count, dt, out.data());
    return out;
  }
};

// Programmatic dependent launch (GemmPlan::pdl): a GEMM that reads the one before it. The first
// (256 x 256, k 2048: four tiles, so most SMs are idle and the second's blocks start at once)
// writes C1 over NaN; the second, launched behind it with PDL, computes C1 B2. Were any global
// access of the second made before the first is done, it would read NaN or a part of C1. Both
// with split-K summed by the second kernel (that kernel launched with PDL too) and without.
TEST(GemmSm90, ADependentLaunchReadsTheKernelBeforeItWhole) {
  SKIP_WITHOUT_ENGINE();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const DataType dt = DataType::bf16;
  bench::Stream stream;
  EngineIo io{dt, stream, std::mt19937(5)};
  const bench::gemm::GemmShape first{1, 256, 256, 2048}, second{1, 256, 256, 256};
  const std::vector<float> a = io.random(first.m * first.k), b1 = io.random(first.k * first.n),
                           b2 = io.random(second.k * second.n);
  const auto da = io.upload(a), db1 = io.upload(b1), db2 = io.upload(b2);
  bench::DeviceBuffer<unsigned char> c1(std::size_t(first.m * first.n) * 2),
      c2(std::size_t(second.m * second.n) * 2), dw(std::size_t(4) * 256 * 256 * 4);
  for (int splits : {1, 4}) {
    SCOPED_TRACE("splits " + std::to_string(splits));
    bench::gemm::GemmPlan p1 = bench::gemm::gemm_plan(first, sms, 128, splits);
    bench::gemm::GemmPlan p2 = bench::gemm::gemm_plan(second, sms, 128, 1);
    p1.pdl = p2.pdl = true;
    c1.fill_bytes_async(0xFF, stream.get());
    c2.fill_bytes_async(0xFF, stream.get());
    bench::gemm::gemm_sm90(bench::MmaDtype::bf16, first, p1, da.data(), db1.data(), c1.data(),
                           bench::gemm::Epilogue{}, dw.data(), stream.get());
    bench::gemm::gemm_sm90(bench::MmaDtype::bf16, second, p2, c1.data(), db2.data(), c2.data(),
                           bench::gemm::Epilogue{}, nullptr, stream.get());
    const std::vector<float> got1 = io.download(c1, std::size_t(first.m * first.n));
    const std::vector<float> got2 = io.download(c2, std::size_t(second.m * second.n));
    const Problem p = matmul_problem(1, second.m, second.n, second.k, dt);
    const std::vector<double> ref =
        reference(second, got1, b2, {}, {}, bench::gemm::EpilogueKind::identity);
    const bench::Correctness c = bench::compare(got2.data(), ref.data(), got2.size(),
                                                tolerance(p, bench::rms(ref.data(), ref.size())));
    EXPECT_TRUE(c.passed) << c.message;
    EXPECT_EQ(c.non_finite, 0u);
    const std::vector<double> ref1 =
        reference(first, a, b1, {}, {}, bench::gemm::EpilogueKind::identity);
    const bench::Correctness c_first =
        bench::compare(got1.data(), ref1.data(), got1.size(),
                       tolerance(matmul_problem(1, first.m, first.n, first.k, dt),
                                 bench::rms(ref1.data(), ref1.size())));
    EXPECT_TRUE(c_first.passed) << "C1: " << c_first.message;
  }
}

// The small-tile path's plan (host code: runs without a GPU): 64 x 64 tiles where they give every
// SM one, else 32 x 32; no split-K unless asked, and then none empty.
TEST(GemmSmallPlan, TileAndSplitRule) {
  bench::gemm::GemmShape s{1, 256, 256, 256};
  bench::gemm::GemmSmallPlan p = bench::gemm::gemm_small_plan(s, 132);
  EXPECT_EQ(p.tile, 32);  // 16 tiles of 64
  EXPECT_EQ(p.blocks, 64);
  EXPECT_EQ(p.splits, 1);
  s = bench::gemm::GemmShape{1, 1280, 1280, 256};
  p = bench::gemm::gemm_small_plan(s, 132);
  EXPECT_EQ(p.tile, 64);  // 400 tiles of 64
  EXPECT_EQ(p.blocks, 400);
  p = bench::gemm::gemm_small_plan(s, 132, 32, 3);  // 8 slices of 32: splits of 3, 3 and 2
  EXPECT_EQ(p.tile, 32);
  EXPECT_EQ(p.splits, 3);
  EXPECT_EQ(p.split_slices, 3);
  EXPECT_EQ(bench::gemm::gemm_small_workspace_bytes(s, p), std::size_t(3) * 1280 * 1280 * 4);
  p = bench::gemm::gemm_small_plan(bench::gemm::GemmShape{1, 64, 64, 40}, 132, 64, 8);
  EXPECT_EQ(p.splits, 2);  // 2 slices: no empty split
  EXPECT_FALSE(bench::gemm::gemm_small_unsupported_reason(bench::MmaDtype::fp16, s,
                                                          bench::gemm::EpilogueKind::identity)
                   .empty());
  s.b_k_major = true;
  EXPECT_FALSE(bench::gemm::gemm_small_unsupported_reason(bench::MmaDtype::bf16, s,
                                                          bench::gemm::EpilogueKind::dgelu_erf)
                   .empty());
}

// The MLP's epilogues (models/mlp/cuda/own_mlp.cpp), bf16, cooperative, each tile (128 x 128,
// 128 x 256, 64 x 64), without and with split-K, and the small-tile path with each of its tiles
// (one batch): bias_gelu_erf_aux on a K-major B (C = gelu(A B^T + bias), aux = A B^T + bias), and
// dgelu_erf on an MN-major B (C = A B * gelu'(aux), C^T to aux_t, column sums added to a vector
// that starts at 1), against float64.
TEST(GemmSm90, MlpEpiloguesMatchTheReference) {
  SKIP_WITHOUT_ENGINE();
  using bench::gemm::EpilogueKind;
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const DataType dt = DataType::bf16;
  bench::Stream stream;
  EngineIo io{dt, stream, std::mt19937(32), 2.0f};
  auto random = [&](std::int64_t count) { return io.random(count); };
  auto upload = [&](const std::vector<float>& v) { return io.upload(v); };
  auto download = [&](const bench::DeviceBuffer<unsigned char>& d, std::size_t count) {
    return io.download(d, count);
  };
  auto expect_close = [&](const std::vector<float>& got, const std::vector<double>& ref,
                          const Problem& p, const char* what) {
    const bench::Correctness c = bench::compare(got.data(), ref.data(), got.size(),
                                                tolerance(p, bench::rms(ref.data(), ref.size())));
    EXPECT_TRUE(c.passed) << what << ": " << c.message;
    EXPECT_EQ(c.non_finite, 0u) << what;
  };
  for (const bench::gemm::GemmShape shape :
       {bench::gemm::GemmShape{1, 200, 264, 520}, bench::gemm::GemmShape{2, 40, 136, 72}}) {
    const std::int64_t M = shape.batch * shape.m, N = shape.n, K = shape.k;
    const std::size_t mn = std::size_t(M * N);
    const Problem p = matmul_problem(shape.batch, shape.m, shape.n, shape.k, dt);
    const std::vector<float> a = random(M * K), b = random(shape.batch * K * N), bias = random(N),
                             z = random(M * N);
    // The sums of A B, with B read [k][n] (dgelu) or [n][k] (the forward, K-major).
    auto product = [&](bool k_major) {
      std::vector<double> c(mn, 0.0);
      for (std::int64_t r = 0; r < M; ++r)
        for (std::int64_t l = 0; l < K; ++l) {
          const double ail = a[std::size_t(r * K + l)];
          const std::int64_t bz = r / shape.m * K * N;
          for (std::int64_t j = 0; j < N; ++j)
            c[std::size_t(r * N + j)] +=
                ail * b[std::size_t(bz + (k_major ? j * K + l : l * N + j))];
        }
      return c;
    };
    const auto da = upload(a), db = upload(b), dbias = upload(bias), dz = upload(z);
    bench::DeviceBuffer<unsigned char> dc(mn * 2), daux(mn * 2), daux_t(mn * 2);
    bench::DeviceBuffer<float> dsums{std::size_t(N)};
    bench::DeviceBuffer<unsigned char> dw(3 * mn * 4 + 4096);  // partials, tile counters
    // wgmma: (BN, splits, 0, splits summed in the kernel); the small-tile path: (0, splits, tile,
    // 0).
    for (const auto& [bn, splits, tile, in_kernel] :
         {std::array{128, 1, 0, 0}, std::array{128, 3, 0, 0}, std::array{128, 3, 0, 1},
          std::array{256, 1, 0, 0}, std::array{256, 3, 0, 0}, std::array{64, 1, 0, 0},
          std::array{64, 3, 0, 0}, std::array{64, 3, 0, 1}, std::array{0, 1, 64, 0},
          std::array{0, 1, 32, 0}, std::array{0, 3, 64, 0}, std::array{0, 3, 32, 0}})
      for (bool forward : {true, false}) {
        SCOPED_TRACE(
            p.str() +
            (bn ? " BN " + std::to_string(bn) : " small-tile path, tile " + std::to_string(tile)) +
            " splits " + std::to_string(splits) + (in_kernel ? " summed in the kernel" : "") +
            (forward ? " bias_gelu_erf_aux" : " dgelu_erf"));
        bench::gemm::GemmShape s = shape;
        s.b_k_major = forward;
        const bool small = bn == 0;
        if (small && s.batch > 1) continue;  // one batch
        bench::gemm::GemmPlan plan =
            bench::gemm::gemm_plan(s, sms, small ? 128 : bn, small ? 1 : splits,
                                   bench::gemm::GemmSchedule::cooperative, bn == 64 ? 64 : 128);
        plan.reduce_in_kernel = in_kernel != 0;
        ASSERT_EQ(plan.bn, small ? 128 : bn);
        const bench::gemm::GemmSmallPlan small_plan =
            bench::gemm::gemm_small_plan(s, sms, small ? tile : 64, splits);
        ASSERT_EQ(plan.splits > 1, !small && splits > 1);
        ASSERT_EQ(small_plan.splits, splits);  // every shape here has 3 slices or more
        ASSERT_LE(bench::gemm::gemm_workspace_bytes(s, plan), dw.bytes());
        ASSERT_LE(bench::gemm::gemm_small_workspace_bytes(s, small_plan), dw.bytes());
        dw.fill_bytes_async(0xFF, stream.get());
        bench::gemm::gemm_clear_counters(s, plan, dw.data(), stream.get());
        dc.fill_bytes_async(0xFF, stream.get());
        daux.fill_bytes_async(0xFF, stream.get());
        daux_t.fill_bytes_async(0xFF, stream.get());
        const std::vector<float> ones(std::size_t(N), 1.0f);
        dsums.upload_async(ones.data(), stream.get());
        bench::gemm::Epilogue e;
        if (forward) {
          e.kind = EpilogueKind::bias_gelu_erf_aux;
          e.bias = dbias.data();
          e.aux = daux.data();
        } else {
          e.kind = EpilogueKind::dgelu_erf;
          e.aux = dz.data();
          e.aux_t = daux_t.data();
          e.column_sums = dsums.data();
        }
        if (small) {
          ASSERT_TRUE(
              bench::gemm::gemm_small_unsupported_reason(bench::MmaDtype::bf16, s, e.kind).empty());
          bench::gemm::gemm_small(bench::MmaDtype::bf16, s, small_plan, da.data(), db.data(),
                                  dc.data(), e, dw.data(), stream.get());
        } else {
          bench::gemm::gemm_sm90(bench::MmaDtype::bf16, s, plan, da.data(), db.data(), dc.data(), e,
                                 dw.data(), stream.get());
        }
        std::vector<double> ref = product(forward), second(mn), sums(std::size_t(N), 1.0);
        for (std::size_t i = 0; i < mn; ++i) {
          const std::size_t j = i % std::size_t(N);
          if (forward) {
            second[i] = ref[i] + bias[j];  // the pre-activation
            ref[i] = 0.5 * second[i] * (1 + std::erf(second[i] / std::sqrt(2.0)));
          } else {
            const double x = z[i];
            ref[i] *= 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                      x * std::exp(-0.5 * x * x) / std::sqrt(2 * 3.14159265358979323846);
            sums[j] += ref[i];
            const std::size_t r = i / std::size_t(N), bz = r / std::size_t(shape.m);
            const std::size_t ri = r % std::size_t(shape.m);
            second[(bz * std::size_t(N) + j) * std::size_t(shape.m) + ri] = ref[i];
          }
        }
        expect_close(download(dc, mn), ref, p, "C");
        expect_close(download(forward ? daux : daux_t, mn), second, p, forward ? "aux" : "aux_t");
        if (!forward) {
          std::vector<float> got(static_cast<std::size_t>(N));
          dsums.download_async(got.data(), stream.get());
          stream.synchronize();
          // FP32 sums of M FP32 results, each a sum of K products: the dot-product rule in
          // FP32 for K + M terms.
          const bench::Correctness c = bench::compare(
              got.data(), sums.data(), got.size(),
              bench::dot_tolerance(DataType::fp32, K + M, bench::rms(sums.data(), sums.size())));
          EXPECT_TRUE(c.passed) << "column sums: " << c.message;
        }
      }
  }
  // What the build does not hold is refused before anything runs.
  EXPECT_FALSE(bench::gemm::gemm_epilogue_unsupported_reason(bench::MmaDtype::fp16, false,
                                                             bench::gemm::GemmSchedule::cooperative,
                                                             EpilogueKind::dgelu_erf)
                   .empty());
  EXPECT_FALSE(bench::gemm::gemm_epilogue_unsupported_reason(bench::MmaDtype::bf16, true,
                                                             bench::gemm::GemmSchedule::pingpong,
                                                             EpilogueKind::bias)
                   .empty());
  EXPECT_TRUE(bench::gemm::gemm_epilogue_unsupported_reason(bench::MmaDtype::bf16, true,
                                                            bench::gemm::GemmSchedule::cooperative,
                                                            EpilogueKind::bias_gelu_erf_aux)
                  .empty());
}

}  // namespace
}  // namespace ops
