// Every CUDA backend built into this binary (each kernel variant of ours in each dtype it claims,
// cuDNN under each way of choosing its algorithm, LibTorch with cudnn.benchmark off and on)
// against the float64 reference, on a randomized set of problems: odd and non-square sizes,
// stride, padding, dilation, groups, channels that do and do not fill a tile, both layouts, every
// dtype.
// A backend must pass what it claims and say why for what it does not.
// Skips, with the reason, where no GPU is present or no CUDA backend was built.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "conv/bench.hpp"
#include "core/error.hpp"
#include "experiments/registry/conv.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/conv/random_problems.hpp"

#if MYCONV_HAVE_CUDA
#include <cstring>
#include <limits>

#include "core/compare.hpp"
#include "core/cuda/compare_cuda.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#endif

namespace conv {
namespace {

std::vector<Problem> gpu_problems() {
  std::vector<Problem> out = {
      parse_problem("mb2ic4ih64oc8kh5"),
      parse_problem("mb32ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1"),
      parse_problem("g4mb1ic8ih13oc8kh3ph1dh1"),
      parse_problem("g8mb2ic8ih10oc8kh3ph1"),      // depthwise
      parse_problem("mb2ic64ih20oc128kh3ph1"),     // full 128x128 tiles, float4 paths
      parse_problem("mb1ic32ih17oc64kh3"),         // 64-row tile, odd pixel count
      parse_problem("g2mb2ic16ih9oc96kh3ph1"),     // 48 channels per group
      parse_problem("mb3ic5ih31oc7kh1"),           // K = 5: partial k slice, unaligned rows
      parse_problem("mb1ic3ih30oc130kh2sh2"),      // two row tiles, the second nearly empty
      parse_problem("g6mb2ic6ih11oc12kh5sh2ph2"),  // depthwise, multiplier 2, 5x5 stride 2
  };
  return testing::randomized_problems(std::move(out), 16, 2025, {24, 40});
}

// One backend under one setting.
struct Config {
  std::string backend;
  BackendOptions options;
  std::string label;
  // dtypes that must pass (a fixed cuDNN algorithm may not support every problem); the others
  // must pass or say why not.
  std::vector<DataType> claims;
};

// Tensor cores of compute capability 8.0 or newer (what our tensor-core variants need).
bool has_sm80_tensor_cores() {
#if MYCONV_HAVE_CUDA
  const std::string cc = bench::cuda_device_info(0).value("compute_capability", "0.0");
  return std::stoi(cc) >= 8;
#else
  return false;
#endif
}

// The major compute capability of device 0 (0 without CUDA).
int device_major() {
#if MYCONV_HAVE_CUDA
  return std::stoi(bench::cuda_device_info(0).value("compute_capability", "0.0"));
#else
  return 0;
#endif
}

std::vector<Config> configs() {
  const std::vector<DataType> fp32 = {DataType::fp32};
  const std::vector<DataType> reduced =
      has_sm80_tensor_cores()
          ? std::vector<DataType>{DataType::tf32, DataType::fp16, DataType::bf16}
          : std::vector<DataType>{};
  std::vector<DataType> all = fp32;
  all.insert(all.end(), reduced.begin(), reduced.end());
  std::vector<Config> c;
  for (const char* v :
       {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "", "auto", "search"}) {
    BackendOptions o;
    o.variant = v;
    const std::string label = std::string("--variant ") + (*v ? v : "default");
    const std::string variant = v;
    const bool tensor_cores = variant == "4" || variant == "5" || variant == "6";
    // Variant 7 (direct small-OC kernel, FP32 math) takes every dtype, on any GPU. Variant 8
    // (depthwise) takes every dtype but only depthwise problems: it must pass those
    // (GpuBackends.DepthwiseVariantPassesAndIsTheDefault) and say why not for the rest.
    const std::vector<DataType> every = {DataType::fp32, DataType::tf32, DataType::fp16,
                                         DataType::bf16};
    // Variant 9 (our im2col + cuBLASLt's GEMM) takes every dtype where cuBLASLt has them (bf16
    // from sm_80 on).
    // Variant 10 (Hopper only) runs a problem where one group's channels fill 128-byte slices:
    // it must pass those and say why not for the rest; so does variant 11 (Hopper, fp16/bf16 1x1
    // layers on the GEMM engine), and variant 12 (Winograd, fp32/tf32 3x3 stride-1 layers:
    // GpuBackends.WinogradVariantPassesOnRandom3x3Problems). auto and search take what the
    // default takes.
    const bool chooses = variant.empty() || variant == "auto" || variant == "search";
    c.push_back({"im2col_gemm_cuda", o, label,
                 chooses                                                 ? all
                 : variant == "10" || variant == "11" || variant == "12" ? std::vector<DataType>{}
                 : variant == "7"                                        ? every
                 : variant == "9"                                        ? all
                 : variant == "8"                                        ? std::vector<DataType>{}
                 : tensor_cores                                          ? reduced
                                                                         : fp32});
  }
  for (const char* a : {"heuristic", "search", "1"}) {
    BackendOptions o;
    o.cudnn_algo = a;
    c.push_back({"cudnn", o, std::string("--cudnn-algo ") + a,
                 std::string(a) != "1" ? fp32 : std::vector<DataType>{}});
  }
  for (bool benchmark : {false, true}) {
    BackendOptions o;
    o.torch_cudnn_benchmark = benchmark;
    c.push_back({"libtorch_cuda", o,
                 std::string("--torch-cudnn-benchmark ") + (benchmark ? "on" : "off"), fp32});
  }
  return c;
}

std::string gpu_unavailable_reason() {
#if MYCONV_HAVE_CUDA
  const bench::CudaAvailability a = bench::cuda_device_available();
  return a.ok ? "" : a.reason;
#else
  return "built without CUDA";
#endif
}

TEST(GpuBackends, MatchTheReferenceOrSayWhyNot) {
  int built = 0;
  for (const auto& e : make_registry(BackendOptions{}))
    if (e.device == "cuda") {
      if (e.backend)
        ++built;
      else
        std::cout << "[ SKIPPED  ] " << e.name << ": not built: " << e.why_missing << "\n";
    }
  if (built == 0) {
    GTEST_SKIP() << "no CUDA backend is built into this binary";
  }
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }

  CaseOptions options = bench::testing::quick_case_options();
  const std::vector<Problem> problems = gpu_problems();
  for (const Config& config : configs()) {
    const auto registry = make_registry(config.options);
    const RegistryEntry* entry = nullptr;
    for (const auto& e : registry)
      if (e.name == config.backend) entry = &e;
    ASSERT_NE(entry, nullptr) << config.backend;
    if (!entry->backend) continue;
    for (Problem p : problems)
      for (DataType dt : bench::all_data_types())
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const HostData data = make_host_data(p, 11);
          const bench::Result r =
              run_case(entry->backend.get(), entry->name, entry->device, "", p, data, options)
                  .result;
          SCOPED_TRACE(config.backend + " " + config.label + " " + p.str() + ": " +
                       bench::to_string(r.status) + " " + r.reason);
          if (std::find(config.claims.begin(), config.claims.end(), dt) != config.claims.end()) {
            EXPECT_EQ(r.status, bench::Status::passed);
          } else {
            EXPECT_TRUE(r.status == bench::Status::passed ||
                        r.status == bench::Status::unsupported);
          }
          if (r.status == bench::Status::unsupported) {
            EXPECT_FALSE(r.reason.empty());
          }
          if (r.status == bench::Status::passed) {
            EXPECT_FALSE(r.algorithm.empty());
            if (config.label == "--variant 9") {  // the im2col / GEMM split
              EXPECT_TRUE(r.metrics.contains("im2col_ms") && r.metrics.contains("gemm_ms"));
            }
            EXPECT_TRUE(r.gpu_time_ms.has_value()) << "no device timer";
            EXPECT_TRUE(r.workspace_bytes.has_value());
          }
        }
  }
}

// A registry made with --variant `variant`.
std::vector<RegistryEntry> registry_with_variant(const std::string& variant) {
  BackendOptions o;
  o.variant = variant;
  return make_registry(o);
}

// The im2col_gemm_cuda entry of a registry made with `variant`, or null where it is not built.
const Backend* im2col_gemm_cuda(const std::vector<RegistryEntry>& registry) {
  for (const auto& e : registry)
    if (e.name == "im2col_gemm_cuda") return e.backend.get();
  return nullptr;
}

// Empty where b, a registry's im2col_gemm_cuda entry, is built into this binary, else why not.
std::string not_built_reason(const Backend* b) {
  return b ? "" : "im2col_gemm_cuda is not built into this binary";
}

// Variant 8's support answers need no GPU: depthwise problems with OC/G <= 4 yes, the others no
// with the reason.
TEST(GpuBackends, DepthwiseVariantSaysWhyNot) {
  const auto registry = registry_with_variant("8");
  const Backend* b = im2col_gemm_cuda(registry);
  MYCONV_SKIP_IF(not_built_reason(b));
  EXPECT_TRUE(b->check_support(parse_problem("g32mb32ic32ih112oc32kh3ph1")).ok);
  EXPECT_TRUE(b->check_support(parse_problem("g8mb2ic8ih9oc32kh5sh2ph2")).ok);  // multiplier 4
  const Support dense = b->check_support(parse_problem("mb2ic4ih9oc8kh3"));
  EXPECT_FALSE(dense.ok);
  EXPECT_NE(dense.reason.find("variant 8: not depthwise"), std::string::npos) << dense.reason;
  const Support grouped = b->check_support(parse_problem("g2mb2ic8ih9oc8kh3"));
  EXPECT_FALSE(grouped.ok);
  const Support wide = b->check_support(parse_problem("g4mb2ic4ih9oc20kh3"));
  EXPECT_FALSE(wide.ok);
  EXPECT_NE(wide.reason.find("multiplier"), std::string::npos) << wide.reason;
}

// Variant 8, and the default, on depthwise problems in every dtype and layout: passed, and the
// default names variant 8 in its algorithm.
TEST(GpuBackends, DepthwiseVariantPassesAndIsTheDefault) {
  const std::vector<Problem> problems = {
      parse_problem("g32mb2ic32ih28oc32kh3ph1"), parse_problem("g24mb2ic24ih15oc24kh3sh2ph1"),
      parse_problem("g8mb1ic8ih13oc16kh5ph2"),   parse_problem("g6mb3ic6ih9oc6kh3ph2dh1"),
      parse_problem("g64mb1ic64ih7oc64kh3ph1"),
  };
  CaseOptions options = bench::testing::quick_case_options();
  for (const char* variant : {"8", ""}) {
    const auto registry = registry_with_variant(variant);
    const Backend* b = im2col_gemm_cuda(registry);
    MYCONV_SKIP_IF(not_built_reason(b));
    MYCONV_SKIP_IF(gpu_unavailable_reason());
    for (Problem p : problems)
      for (DataType dt : bench::all_data_types())
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const HostData data = make_host_data(p, 11);
          const bench::Result r =
              run_case(b, "im2col_gemm_cuda", "cuda", "", p, data, options).result;
          SCOPED_TRACE(std::string("--variant ") + (*variant ? variant : "default") + " " +
                       p.str() + ": " + bench::to_string(r.status) + " " + r.reason);
          EXPECT_EQ(r.status, bench::Status::passed);
          // The default states the heuristic's choice first: "auto (depthwise ...): v8 ...".
          const std::string expected = std::string(*variant ? "" : "auto (depthwise") +
                                       (*variant ? "v8 depthwise direct" : "");
          EXPECT_EQ(r.algorithm.rfind(expected, 0), 0u) << r.algorithm;
          EXPECT_NE(r.algorithm.find("v8 depthwise direct"), std::string::npos) << r.algorithm;
        }
  }
}

// Randomized 3x3 stride-1 problems for variant 12: batch 1-3, odd and even sizes 1-19, padding
// 0-2 (the output at least 1x1), channels 1-45 (filling no GEMM tile), then fixed ones for the
// SGEMM's paths: full 128-row tiles, 64- and 32-row tiles, float4 column loads (P % 4 == 0) and
// split-K (a short grid).
std::vector<Problem> winograd_problems() {
  std::vector<Problem> out;
  for (const char* text : {"mb2ic128ih28oc128kh3ph1", "mb3ic40ih14oc64kh3ph1",
                           "mb1ic512ih7oc512kh3ph1", "mb1ic24ih8oc20kh3ph1"})
    out.push_back(parse_problem(text));
  std::mt19937 rng(1212);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < 16) {
    Problem p = parse_problem("mb1ic1ih3oc1kh3");
    p.mb = pick(1, 3);
    p.ic = pick(1, 45);
    p.oc = pick(1, 45);
    p.ih = pick(1, 19);
    p.iw = pick(1, 19);
    p.ph = pick(0, 2);
    p.pw = pick(0, 2);
    if (p.validate().empty() && p.unsupported_reason().empty()) out.push_back(p);
  }
  return testing::limited_by_environment(out);
}

// Variant 12 (Winograd F(2x2,3x3)): first its support answers, which need no GPU (3x3 stride-1
// dense one-group fp32/tf32 layers yes, the others no with the reason); then on those problems,
// both sub-variants (12.1 separate kernels, 12.2 one fused kernel), fp32 and tf32, nchw and nhwc:
// passed against the float64 reference with the output poisoned before each run (the case
// runner's check; 12.1's workspace too), its algorithm, workspace and step times stated.
TEST(GpuBackends, WinogradVariantPassesOnRandom3x3Problems) {
  CaseOptions options = bench::testing::quick_case_options();
  for (const char* variant : {"12.1", "12.2"}) {
    const auto registry = registry_with_variant(variant);
    const Backend* b = im2col_gemm_cuda(registry);
    MYCONV_SKIP_IF(not_built_reason(b));
    EXPECT_TRUE(b->check_support(parse_problem("mb32ic128ih28oc128kh3ph1")).ok);
    EXPECT_TRUE(b->check_support(parse_problem("mb1ic3ih5oc7kh3dttf32nhwc")).ok);
    for (const char* text :
         {"mb2ic8ih9oc8kh3ph1dtfp16", "mb2ic8ih9oc8kh5ph2", "mb2ic8ih9oc8kh3sh2ph1",
          "g2mb2ic8ih9oc8kh3ph1", "mb2ic8ih9oc8kh3ph2dh1"}) {
      const Support s = b->check_support(parse_problem(text));
      EXPECT_FALSE(s.ok) << text;
      EXPECT_NE(s.reason.find("variant 12"), std::string::npos) << text << ": " << s.reason;
    }
    MYCONV_SKIP_IF(gpu_unavailable_reason());
    const bool fused = std::string(variant) == "12.2";
    for (Problem p : winograd_problems())
      for (DataType dt : {DataType::fp32, DataType::tf32})
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const HostData data = make_host_data(p, 12);
          const bench::Result r =
              run_case(b, "im2col_gemm_cuda", "cuda", "", p, data, options).result;
          SCOPED_TRACE(std::string("--variant ") + variant + " " + p.str() + ": " +
                       bench::to_string(r.status) + " " + r.reason + " / " + r.algorithm);
          EXPECT_EQ(r.status, bench::Status::passed);
          EXPECT_EQ(r.algorithm.rfind("v12 Winograd F(2x2,3x3)", 0), 0u);
          EXPECT_NE(r.algorithm.find(fused ? ": 12.2 " : ": 12.1 "), std::string::npos);
          EXPECT_GT(r.workspace_bytes.value_or(0), 0);
          EXPECT_TRUE(r.metrics.contains("filter_transform_ms"));
          EXPECT_TRUE(r.metrics.contains(fused ? "fused_ms" : "gemm_ms"));
        }
  }
}

// --variant auto states the heuristic's choice and search the timed candidates; on a Hopper the
// heuristic takes variant 10 for a 64-channel 3x3 layer in tf32/fp16/bf16, and variant 10 itself
// passes there in both layouts.
TEST(GpuBackends, AutoAndSearchStateTheirChoice) {
  CaseOptions options = bench::testing::quick_case_options();
  for (const char* variant : {"auto", "search", "10"}) {
    const auto registry = registry_with_variant(variant);
    const Backend* b = im2col_gemm_cuda(registry);
    MYCONV_SKIP_IF(not_built_reason(b));
    MYCONV_SKIP_IF(gpu_unavailable_reason());
    const bool hopper = has_sm80_tensor_cores() && device_major() == 9;
    for (Problem p :
         {parse_problem("mb2ic64ih12oc72kh3ph1"), parse_problem("g8mb2ic8ih10oc8kh3ph1")})
      for (DataType dt : bench::all_data_types())
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const bool wgmma_case = hopper && dt != DataType::fp32 && p.g == 1;
          if (std::string(variant) == "10" && !wgmma_case) continue;
          if (dt != DataType::fp32 && !has_sm80_tensor_cores() && p.g == 1) continue;
          const HostData data = make_host_data(p, 13);
          const bench::Result r =
              run_case(b, "im2col_gemm_cuda", "cuda", "", p, data, options).result;
          SCOPED_TRACE(std::string("--variant ") + variant + " " + p.str() + ": " +
                       bench::to_string(r.status) + " " + r.reason + " / " + r.algorithm);
          ASSERT_EQ(r.status, bench::Status::passed);
          const std::string v = variant;
          if (v == "auto") {
            EXPECT_EQ(r.algorithm.rfind("auto (", 0), 0u);
            if (wgmma_case) {
              EXPECT_NE(r.algorithm.find("): v10 implicit GEMM wgmma"), std::string::npos);
            }
          } else if (v == "search") {
            EXPECT_EQ(r.algorithm.rfind("search (v", 0), 0u);
            ASSERT_TRUE(r.extra.contains("search_median_ms"));
            if (dt == DataType::fp32 && p.g == 1) {  // a 3x3 stride-1 layer: Winograd timed too
              EXPECT_TRUE(r.extra["search_median_ms"].contains("v12.1")) << r.extra.dump();
              EXPECT_TRUE(r.extra["search_median_ms"].contains("v12.2")) << r.extra.dump();
            }
          } else {
            EXPECT_EQ(r.algorithm.rfind("v10 implicit GEMM wgmma", 0), 0u);
          }
        }
  }
}

// The float64 reference on the GPU (device_reference(): conv/cuda/reference_conv_cuda.hpp)
// against reference_conv on this file's fixed and random problems (grouped, depthwise, strided,
// dilated, padded, asymmetric, batch > 1), both layouts, fp32 and fp16 inputs. The kernel performs
// the host loop's operations in its order (no fused multiply-add), so the two agree to the last
// bit unless the host compiler contracts a multiply-add; the bound, 1e-12 of the output's rms,
// allows that (one rounding of a product is ~1e-16 of it, summed over at most a few thousand
// terms here) and still catches any wrong index, tap or group, which moves an output by a whole
// product (~1e-2 of the rms or more).
TEST(GpuReference, MatchesTheCpuReference) {
  const DeviceReferenceConv device = device_reference();
  if (!device) {
    GTEST_SKIP() << "built without CUDA: no GPU reference";
  }
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  for (Problem p : gpu_problems())
    for (DataType dt : {DataType::fp32, DataType::fp16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = dt;
        p.layout = layout;
        const HostData cpu = make_host_data(p, 11);
        const HostData gpu = make_host_data(p, 11, device);
        SCOPED_TRACE(p.str());
        ASSERT_EQ(gpu.ref_fallback, "");
        ASSERT_EQ(gpu.ref_device, "cuda");
        ASSERT_EQ(gpu.src, cpu.src);
        ASSERT_EQ(gpu.ref.size(), cpu.ref.size());
        ASSERT_GT(cpu.ref_rms, 0.0);
        const double bound = 1e-12 * cpu.ref_rms;
        for (std::size_t i = 0; i < cpu.ref.size(); ++i)
          ASSERT_LE(std::abs(gpu.ref[i] - cpu.ref[i]), bound) << "at " << i;
      }
}

// A problem whose tensors cannot be allocated on the device: the GPU reference says why and
// leaves no pending error, so make_host_data falls back to the CPU and the next GPU call works.
TEST(GpuReference, AllocationFailureIsReportedAndCleared) {
  const DeviceReferenceConv device = device_reference();
  if (!device) {
    GTEST_SKIP() << "built without CUDA: no GPU reference";
  }
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  Problem huge = parse_problem("mb1ic1024ih1024oc1kh1");
  huge.mb = std::int64_t{1} << 20;  // 2^50 input elements: 4 PiB, allocated (and failing) first
  const float one = 1;
  double out = 0;
  const std::string why = device(huge, &one, &one, &out, nullptr, nullptr);
  EXPECT_FALSE(why.empty());
  const Problem small = parse_problem("g2mb2ic4ih7oc6kh3ph1nhwc");
  const HostData gpu = make_host_data(small, 5, device);
  EXPECT_EQ(gpu.ref_device, "cuda") << gpu.ref_fallback;
}

#if MYCONV_HAVE_CUDA
// A stored output value that the float conversions cannot make: NaN or Inf in dt's storage.
void store_special(std::vector<unsigned char>& bytes, DataType dt, std::size_t i, bool nan) {
  if (dt == DataType::fp16 || dt == DataType::bf16) {
    const std::uint16_t bits =
        dt == DataType::fp16 ? (nan ? 0x7E00 : 0x7C00) : (nan ? 0x7FC0 : 0xFF80);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  } else {
    const float v = nan ? std::numeric_limits<float>::quiet_NaN() : -INFINITY;
    std::memcpy(bytes.data() + 4 * i, &v, 4);
  }
}

// The check on the device (core/cuda/compare_cuda.hpp) against the host check (core/compare.hpp)
// on the very same stored outputs, fp32, fp16 and bf16: correct ones, ones scattered across the
// tolerance bound (many elements close to it, so that a difference in the per-element arithmetic
// shows), one element far off, more mismatches than are listed, NaN, Inf,
// a constant output, a poisoned (all-NaN) one, and none. The counts, the maximum, the first
// mismatches, the message and the decision must be equal; rel_l2_err equal within rounding.
TEST(GpuCheck, DecidesAsTheHostCheck) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  constexpr std::size_t n = 300001;  // more than the reduction's 1024 blocks of 256 cover at once
  std::mt19937_64 rng(30);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> spread(-1.3, 1.3);
  std::vector<double> ref(n);
  for (double& v : ref) v = normal(rng);
  bench::DeviceBuffer<double> d_ref(n);
  d_ref.upload_async(ref.data(), nullptr);
  for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16}) {
    const bench::Tolerance tol = bench::dot_tolerance(dt, 576, bench::rms(ref.data(), n));
    std::vector<float> exact(n), near(n);
    for (std::size_t i = 0; i < n; ++i) {
      exact[i] = bench::round_to(dt, static_cast<float>(ref[i]));
      const double bound = tol.atol + tol.rtol * std::fabs(ref[i]);
      near[i] = bench::round_to(dt, static_cast<float>(ref[i] + spread(rng) * bound));
    }
    struct Output {
      std::string label;
      std::vector<unsigned char> bytes;
    };
    std::vector<Output> outputs;
    outputs.push_back({"in tolerance", bench::to_storage_bytes(exact, dt)});
    outputs.push_back({"across the bound", bench::to_storage_bytes(near, dt)});
    std::vector<float> one_off = exact;
    one_off[123457] = bench::round_to(dt, static_cast<float>(ref[123457] + 0.5));
    outputs.push_back({"one element off", bench::to_storage_bytes(one_off, dt)});
    std::vector<float> many_off = exact;
    for (std::size_t i : {299999, 7, 1000, 262144, 262143, 5, 150000})
      many_off[i] = bench::round_to(dt, static_cast<float>(ref[i] - 1.0));
    outputs.push_back({"seven off", bench::to_storage_bytes(many_off, dt)});
    Output with_nan{"NaN", bench::to_storage_bytes(exact, dt)};
    store_special(with_nan.bytes, dt, 0, true);
    store_special(with_nan.bytes, dt, 200000, true);
    outputs.push_back(with_nan);
    Output with_inf{"Inf", bench::to_storage_bytes(one_off, dt)};
    store_special(with_inf.bytes, dt, n - 1, false);
    outputs.push_back(with_inf);
    outputs.push_back({"constant", bench::to_storage_bytes(std::vector<float>(n, 0.5f), dt)});
    outputs.push_back(
        {"poisoned", std::vector<unsigned char>(exact.size() * bench::storage_bytes(dt), 0xFF)});
    outputs.push_back({"empty", {}});

    for (const Output& o : outputs) {
      SCOPED_TRACE(bench::to_string(dt) + ", " + o.label);
      const std::size_t count = o.bytes.size() / bench::storage_bytes(dt);
      std::vector<float> got(count);
      bench::from_storage_bytes(o.bytes.data(), count, dt, got.data());
      const bench::Correctness host = bench::compare(got.data(), ref.data(), count, tol);
      bench::DeviceBuffer<unsigned char> d_out(o.bytes.size());
      d_out.upload_async(o.bytes.data(), nullptr);
      bench::Correctness dev;
      ASSERT_EQ(
          bench::compare_on_device({d_out.data(), dt, count, nullptr}, d_ref.data(), tol, &dev),
          "");
      EXPECT_EQ(dev.passed, host.passed);
      EXPECT_EQ(dev.message, host.message);
      EXPECT_EQ(dev.elements, host.elements);
      EXPECT_EQ(dev.mismatches, host.mismatches);
      EXPECT_EQ(dev.non_finite, host.non_finite);
      EXPECT_EQ(dev.mistrusted, host.mistrusted);
      EXPECT_EQ(dev.max_abs_err, host.max_abs_err);
      if (std::isfinite(host.rel_l2_err))
        EXPECT_NEAR(dev.rel_l2_err, host.rel_l2_err, 1e-12 * host.rel_l2_err + 1e-300);
      else
        EXPECT_EQ(dev.rel_l2_err, host.rel_l2_err);
      ASSERT_EQ(dev.first_mismatches.size(), host.first_mismatches.size());
      for (std::size_t i = 0; i < host.first_mismatches.size(); ++i) {
        EXPECT_EQ(dev.first_mismatches[i].index, host.first_mismatches[i].index);
        EXPECT_EQ(dev.first_mismatches[i].expected, host.first_mismatches[i].expected);
        const double a = dev.first_mismatches[i].got, b = host.first_mismatches[i].got;
        EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << a << " vs " << b;
      }
    }
    // The expected outcomes, so that the comparison above is of the cases it names.
    std::vector<float> got(n);
    bench::from_storage_bytes(outputs[0].bytes.data(), n, dt, got.data());
    EXPECT_TRUE(bench::compare(got.data(), ref.data(), n, tol).passed);
    bench::from_storage_bytes(outputs[1].bytes.data(), n, dt, got.data());
    const bench::Correctness across = bench::compare(got.data(), ref.data(), n, tol);
    EXPECT_GT(across.mismatches, n / 20);
    EXPECT_LT(across.mismatches, n / 2);
    bench::from_storage_bytes(outputs[3].bytes.data(), n, dt, got.data());
    EXPECT_EQ(bench::compare(got.data(), ref.data(), n, tol).mismatches, 7u);
  }
}

// Cases of the backends that hand out their output (im2col_gemm_cuda, cudnn, libtorch_cuda) with
// the reference on the device: the status and counts of the host check, and the check on the device
// (extra.check_device "cuda"; libtorch_cuda where ATen's output is in the problem's layout, else
// on the host with extra.check_fallback saying why).
TEST(GpuCheck, BackendsAreCheckedOnTheDevice) {
  const DeviceReferenceConv device = device_reference();
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  CaseOptions options = bench::testing::quick_case_options();
  int on_device = 0;
  const auto registry = make_registry(BackendOptions{});
  for (const auto& e : registry) {
    if (e.name != "im2col_gemm_cuda" && e.name != "cudnn" && e.name != "libtorch_cuda") continue;
    if (!e.backend) continue;
    for (Problem p :
         {parse_problem("mb2ic16ih14oc32kh3ph1"), parse_problem("g8mb2ic8ih10oc8kh3ph1")})
      for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16})
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const HostData with = make_host_data(p, 5, device);
          ASSERT_NE(with.device_check, nullptr) << with.ref_fallback << with.device_check_none;
          const bench::Result dev =
              run_case(e.backend.get(), e.name, e.device, "", p, with, options).result;
          const bench::Result host =
              run_case(e.backend.get(), e.name, e.device, "", p, make_host_data(p, 5), options)
                  .result;
          SCOPED_TRACE(e.name + " " + p.str() + ": " + bench::to_string(dev.status) + " " +
                       dev.reason);
          EXPECT_EQ(dev.status, host.status);
          if (!dev.correctness) continue;
          ASSERT_TRUE(host.correctness.has_value());
          EXPECT_EQ(dev.correctness->mismatches, host.correctness->mismatches);
          EXPECT_EQ(dev.correctness->passed, host.correctness->passed);
          EXPECT_EQ(host.extra.value("check_device", ""), "cpu");
          const std::string where = dev.extra.value("check_device", "");
          if (where == "cuda") {
            ++on_device;
            EXPECT_FALSE(dev.extra.contains("check_fallback"));
          } else {
            EXPECT_EQ(e.name, "libtorch_cuda")
                << "checked on the host: " << dev.extra.value("check_fallback", "");
            EXPECT_EQ(where, "cpu");
            EXPECT_TRUE(dev.extra.contains("check_fallback"));
          }
        }
  }
  EXPECT_GT(on_device, 0) << "no backend's output was checked on the device";
}
#endif

TEST(GpuBackends, UnknownSettingsAreUsageErrors) {
  BackendOptions o;
  o.variant = "0";
  o.cudnn_algo = "fastest";
  bool any = false;
  for (const auto& e : make_registry(BackendOptions{}))
    any = any || (e.device == "cuda" && e.backend);
  if (!any) {
    GTEST_SKIP() << "no CUDA backend is built into this binary";
  }
  EXPECT_THROW(make_registry(o), bench::UsageError);
}

}  // namespace
}  // namespace conv
