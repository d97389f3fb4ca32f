// Every op backend built into this binary, against the float64 reference, on a randomized op set
// (tests/ops/random_ops.hpp: odd sizes, ranks 1-4, broadcasts, axis sets, permutations) in every
// dtype: a backend must pass what it claims and say why for what it does not; never incorrect or
// failed. The CPU backends run everywhere; the GPU backends (own_cuda in every variant, cub_cuda,
// cublaslt, libtorch_cuda) skip, with the reason, where no GPU is present.
#include <gtest/gtest.h>

#include <set>

#include "experiments/registry/ops.hpp"
#include "ops/bench.hpp"
#include "ops/score.hpp"
#include "ops/settings.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/ops/random_ops.hpp"
#if MYCONV_HAVE_CUDA
#include "tests/common/gpu_skip.hpp"
#endif

namespace ops {
namespace {

using bench::testing::quick_case_options;

// Runs every problem in every dtype through the backends of `device` made with `options`;
// returns how many cases passed.
int check_backends(const std::string& device, const BackendOptions& backend_options, int per_op) {
  const auto registry = make_registry(backend_options);
  int passed = 0;
  for (const auto& e : registry) {
    if (e.device != device || !e.backend) continue;
    if (!e.backend->available().ok) continue;
    for (DataType dt : bench::all_data_types())
      for (const Problem& p : testing::randomized_ops(per_op, dt, 77)) {
        const HostData data = make_host_data(p, 5);
        const bench::Result r =
            run_case(e.backend.get(), e.name, e.device, "", p, data, quick_case_options()).result;
        SCOPED_TRACE(e.name +
                     (backend_options.variant.empty() ? std::string()
                                                      : " --variant " + backend_options.variant) +
                     " " + p.str() + ": " + bench::to_string(r.status) + " " + r.reason);
        if (r.status == bench::Status::incorrect && r.extra.contains("known_issue")) {
          // Only through a library defect the backend names (LibTorch 1.13's CPU 16-bit kernels),
          // with the issue in the reason: never passed by a loosened tolerance.
          EXPECT_NE(dt, DataType::fp32);
          EXPECT_NE(r.reason.find("(known issue: "), std::string::npos);
          continue;
        }
        EXPECT_TRUE(r.status == bench::Status::passed || r.status == bench::Status::unsupported);
        if (r.status == bench::Status::unsupported) {
          EXPECT_FALSE(r.reason.empty());
        }
        passed += r.status == bench::Status::passed;
      }
  }
  return passed;
}

TEST(OpsCpuBackends, MatchTheReferenceOrSayWhyNot) {
  const auto registry = make_registry(BackendOptions{});
  int built = 0;
  for (const auto& e : registry) {
    if (e.device != "cpu") continue;
    if (!e.backend) {
      std::cout << "[ SKIPPED  ] " << e.name << ": " << e.why_missing << "\n";
      continue;
    }
    ++built;
  }
  if (built == 0) GTEST_SKIP() << "no CPU op backend is built into this binary";
  EXPECT_GT(check_backends("cpu", BackendOptions{}, 3), 0);
}

// Every fp32 problem of the set passes on every CPU backend except where the library has no such
// op (a reason naming it): fp32 is every backend's claim.
TEST(OpsCpuBackends, Fp32IsPassedOrTheOpIsMissing) {
  const auto registry = make_registry(BackendOptions{});
  for (const auto& e : registry) {
    if (e.device != "cpu" || !e.backend || !e.backend->available().ok) continue;
    for (const Problem& p : testing::randomized_ops(2, DataType::fp32, 78)) {
      const bench::Result r = run_case(e.backend.get(), e.name, e.device, "", p,
                                       make_host_data(p, 6), quick_case_options())
                                  .result;
      SCOPED_TRACE(e.name + " " + p.str() + ": " + r.reason);
      if (r.status != bench::Status::passed) {
        EXPECT_EQ(r.status, bench::Status::unsupported);
        EXPECT_NE(r.reason.find(to_string(p.op)), std::string::npos)
            << "an fp32 case may only be unsupported for want of the op itself";
      }
    }
  }
}

TEST(OpsGpuBackends, MatchTheReferenceOrSayWhyNot) {
#if MYCONV_HAVE_CUDA
  MYCONV_SKIP_WITHOUT_GPU();
  EXPECT_GT(check_backends("cuda", BackendOptions{}, 3), 0);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// Each of our kernel variants (a variant an op does not have is unsupported, saying which it has).
TEST(OpsGpuBackends, EveryOwnVariantMatchesTheReference) {
#if MYCONV_HAVE_CUDA
  MYCONV_SKIP_WITHOUT_GPU();
  for (int v = 1; v <= 20; ++v) {  // matmul has the most: 20 (ops/cuda/matmul_plan.cpp)
    BackendOptions options;
    options.variant = std::to_string(v);
    check_backends("cuda", options, 2);
  }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(OpsRegistry, NamesAreUniqueAndMissingOnesSayWhy) {
  const auto registry = make_registry(BackendOptions{});
  const std::set<std::string> names = bench::testing::expect_well_formed_registry(registry);
  EXPECT_EQ(names.count(reference_backend("cpu")), 1u);
  EXPECT_EQ(names.count(reference_backend("cuda")), 1u);
}

}  // namespace
}  // namespace ops
