// Variant 10, the Hopper wgmma + TMA convolution (conv/cuda/wgmma_conv.{hpp,cu}) and its plan
// (conv/cuda/wgmma_conv_config.hpp). The plan's tests run everywhere; the kernel's run on a
// compute capability 9.0 GPU with the sm_90a build and skip, with the reason, elsewhere: every
// dtype (tf32, fp16, bf16), both layouts (nchw through variant 6's repack), both tile widths,
// with and without split-K, against the float64 reference, the output poisoned first.
// Variant 11, 1x1 layers on the GEMM engine (conv/cuda/gemm_1x1.*), on the same GPU: fp16 and
// bf16, nchw (A shared by the batch) and nhwc (B K-major), odd sizes (k under one block and not a
// multiple of 64, m and n past tile edges, 33 images), each tile, split-K (summed by a second
// kernel, and in the kernel: launched twice on the counters the first launch left), ping-pong,
// the rule's plan and a grid of 2, the split-K partials poisoned too; then through the backend
// with --variant 11 and auto.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv/bench.hpp"
#include "conv/cuda/device_facts.hpp"
#include "conv/cuda/gemm_1x1.hpp"
#include "conv/cuda/gemm_1x1_config.hpp"
#include "conv/cuda/im2col_gemm_cuda.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/variant_choice.hpp"
#include "conv/cuda/variant_support.hpp"
#include "conv/cuda/wgmma_conv.hpp"
#include "conv/cuda/wgmma_conv_config.hpp"
#include "conv/data.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "core/dtype.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/conv/device_case.hpp"

namespace conv {
namespace {

Im2colGeometry geometry(const char* text, Layout layout = Layout::nhwc) {
  Problem p = parse_problem(text);
  p.layout = layout;
  return make_im2col_geometry(p);
}

TEST(WgmmaConvPlan, SupportNeedsOneGroupAndWhole16ByteChannelRows) {
  EXPECT_EQ(wgmma_conv_unsupported_reason(geometry("mb32ic64ih56oc64kh3ph1"), 2), "");
  EXPECT_EQ(wgmma_conv_unsupported_reason(geometry("mb32ic32ih56oc64kh3ph1"), 4), "");
  // Part slices: 32 and 80 fp16 channels (the last slice zero-filled), 36 tf32 ones.
  EXPECT_EQ(wgmma_conv_unsupported_reason(geometry("mb32ic32ih56oc64kh3ph1"), 2), "");
  EXPECT_EQ(wgmma_conv_unsupported_reason(geometry("mb32ic80ih73oc192kh3"), 2), "");
  EXPECT_EQ(wgmma_conv_unsupported_reason(geometry("mb2ic36ih9oc64kh3"), 4), "");
  EXPECT_EQ(wgmma_conv_plan(geometry("mb32ic80ih73oc192kh3"), 2, 132).slices, 9 * 2);
  EXPECT_EQ(wgmma_conv_plan(geometry("mb2ic36ih9oc64kh3"), 4, 132).slices, 9 * 2);
  // Rows that are not whole 16-byte units: 3 channels; 20 fp16 (40 bytes); 6 tf32 (24 bytes).
  EXPECT_NE(wgmma_conv_unsupported_reason(geometry("mb32ic3ih224oc64kh7sh2ph3"), 2), "");
  EXPECT_NE(wgmma_conv_unsupported_reason(geometry("mb2ic20ih9oc64kh3"), 2), "");
  EXPECT_NE(wgmma_conv_unsupported_reason(geometry("mb2ic6ih9oc64kh3"), 4), "");
  EXPECT_NE(wgmma_conv_unsupported_reason(geometry("g2mb2ic128ih9oc128kh3ph1"), 2), "");
  EXPECT_NE(wgmma_conv_unsupported_reason(geometry("mb2ic64ih40oc64kh3sh9"), 2), "");
  EXPECT_NE(wgmma_conv_unsupported_reason(geometry("mb2ic64ih40oc64kh3ph1"), 8), "");
}

TEST(WgmmaConvPlan, Tf32RoundingInTheKernelFor1x1FiltersByTheCopyElse) {
  const Im2colGeometry one = geometry("mb32ic64ih56oc256kh1");
  const Im2colGeometry three = geometry("mb32ic128ih28oc128kh3ph1");
  EXPECT_EQ(wgmma_tf32_rounding(one, nullptr), WgmmaTf32Rounding::in_kernel);
  EXPECT_EQ(wgmma_tf32_rounding(three, ""), WgmmaTf32Rounding::copy);
  EXPECT_EQ(wgmma_tf32_rounding(three, "auto"), WgmmaTf32Rounding::copy);
  EXPECT_EQ(wgmma_tf32_rounding(three, "kernel"), WgmmaTf32Rounding::in_kernel);
  EXPECT_EQ(wgmma_tf32_rounding(one, "copy"), WgmmaTf32Rounding::copy);
  EXPECT_THROW(wgmma_tf32_rounding(one, "fast"), std::invalid_argument);
}

TEST(WgmmaConvPlan, TileDepthAndSharedMemory) {
  const WgmmaConvPlan narrow = wgmma_conv_plan(geometry("mb32ic64ih56oc64kh3ph1"), 2, 132);
  EXPECT_EQ(narrow.bn, 64);
  EXPECT_EQ(narrow.bk, 64);
  EXPECT_EQ(narrow.slices, 9);
  EXPECT_EQ(narrow.m_tiles, 32 * 56 * 56 / 128);
  const WgmmaConvPlan wide = wgmma_conv_plan(geometry("mb32ic128ih28oc128kh3ph1"), 4, 132);
  EXPECT_EQ(wide.bn, 128);
  EXPECT_EQ(wide.bk, 32);
  EXPECT_EQ(wide.slices, 9 * 4);
  EXPECT_EQ(narrow.stages, 7);
  EXPECT_EQ(wide.stages, 4);
  for (const WgmmaConvPlan& p : {narrow, wide}) {
    EXPECT_LE(p.smem_bytes, kWgmmaSmemLimit);  // Hopper's opt-in limit per block
    // The stages, the staging tile (either layout) and the alignment slack fit in it.
    EXPECT_GE(p.smem_bytes, std::size_t(p.stages) * p.stage_bytes() +
                                std::size_t(kWgmmaBm) * (p.bn + 4) * sizeof(float) + 1024);
    EXPECT_GE(p.smem_bytes, std::size_t(p.stages) * p.stage_bytes() +
                                std::size_t(p.bn) * (kWgmmaBm + 4) * sizeof(float) + 1024);
    // One more stage would not fit.
    EXPECT_GT(p.smem_bytes + p.stage_bytes(), kWgmmaSmemLimit);
    // Persistent: one block per SM at most, never more blocks than units.
    EXPECT_EQ(p.grid, int(std::min<std::int64_t>(p.units(), 132)));
  }
  EXPECT_EQ(wgmma_conv_plan(geometry("mb1ic64ih8oc64kh1"), 2, 132).grid, 1);
}

TEST(WgmmaConvPlan, SplitKOnlyWhereTilesLeaveSmsIdle) {
  // res5 at batch 32: 13 x 4 = 52 tiles on 132 SMs: two splits fill 79% of one wave.
  const WgmmaConvPlan res5 = wgmma_conv_plan(geometry("mb32ic512ih7oc512kh3ph1"), 2, 132);
  EXPECT_EQ(res5.m_tiles * res5.n_tiles, 52);
  EXPECT_EQ(res5.splits, 2);
  EXPECT_GE(res5.slices / res5.splits, kWgmmaMinSlicesPerSplit);
  // A full grid never splits.
  EXPECT_EQ(wgmma_conv_plan(geometry("mb32ic64ih56oc256kh1"), 2, 132).splits, 1);
  // Too few slices to split: one 1x1 slice.
  EXPECT_EQ(wgmma_conv_plan(geometry("mb1ic64ih8oc64kh1"), 2, 132).splits, 1);
  // The width by the estimated time: OC 192 over 73 m-tiles is 146 128-wide tiles (two waves on
  // 132 SMs, the second nearly empty) or 219 64-wide ones; OC 256 over 784 m-tiles stays 128.
  const WgmmaConvPlan mixed7 = wgmma_conv_plan(geometry("mb32ic768ih17oc192kh1"), 2, 132);
  EXPECT_EQ(mixed7.bn, 64);
  EXPECT_EQ(mixed7.splits, 1);
  EXPECT_EQ(wgmma_conv_plan(geometry("mb32ic64ih56oc256kh1"), 2, 132).bn, 128);
  // Overrides.
  const WgmmaConvPlan forced = wgmma_conv_plan(geometry("mb1ic64ih8oc256kh3ph1"), 2, 132, 64, 3);
  EXPECT_EQ(forced.bn, 64);
  EXPECT_EQ(forced.splits, 3);
  EXPECT_NE(wgmma_conv_plan_name(forced).find("split-K 3"), std::string::npos);
}

// ---- The kernel on the GPU ----------------------------------------------------------------------

std::vector<Problem> wgmma_problems() {
  std::vector<Problem> out;
  for (const char* text : {
           "mb2ic64ih20oc128kh3ph1",           // full 128-channel tile
           "mb1ic64ih17oc64kh3",               // odd pixel count, the 64 tile, no padding
           "mb3ic128ih9oc72kh3sh2ph1",         // stride 2, OC past a tile edge
           "mb2ic64ih13oc130kh1",              // 1x1, a nearly empty second channel tile
           "mb1ic64ih10oc64kh3ph2dh2",         // dilation
           "mb2ic64ih12iw20oc64kh3kw1ph1pw0",  // H and W differ in size, kernel and padding
           "mb2ic64ih30oc64kh7sh2ph3",         // 7x7 stride 2
           "mb4ic256ih14oc256kh3ph1",          // K = 2304
           "mb2ic512ih7oc512kh3ph1",           // res5-like: 49 pixels per image
           "mb1ic64ih5iw7oc67kh3kw3ph1pw1",    // M x OC odd: split-K planes start unaligned
           "mb2ic64ih6iw7oc64kh3kw3ph1pw1",    // H*W = 42: the nchw repack's 2-element loads
           "mb2ic80ih9oc64kh3ph1",             // a tap's last slice part-filled (16 fp16, tf32)
           "mb2ic40ih11oc72kh1",               // 1x1: one part slice (fp16), 32 + 8 (tf32)
           "mb1ic24ih12oc130kh3sh2ph1",        // 24 channels, stride 2, OC past two tiles
           "mb2ic20ih9oc64kh5ph2",             // 20: nchw padded to 24 / 20; nhwc repacked (fp16)
       })
    out.push_back(parse_problem(text));
  return out;
}

// Empty where the wgmma kernels can run here (a GPU, and one they take), else why not.
std::string wgmma_unusable() {
  if (const std::string why = testing::gpu_unavailable_reason(); !why.empty()) return why;
  return wgmma_conv_unusable_reason();
}

// Multiprocessors of device 0, the one the tests run on.
int device_sm_count() {
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}

MmaType mma_type_of(DataType dt) {
  return dt == DataType::fp16   ? MmaType::fp16
         : dt == DataType::bf16 ? MmaType::bf16
                                : MmaType::tf32;
}

// The GPU test's problem list, checked where CI runs (no GPU): every descriptor parses.
TEST(WgmmaConvPlan, TheGpuTestsProblemsParse) {
  std::vector<Problem> problems;
  ASSERT_NO_THROW(problems = wgmma_problems());
  EXPECT_EQ(problems.size(), 15u);
}

TEST(WgmmaConv, EveryTypeLayoutTileAndSplitMatchesTheReference) {
  if (const std::string why = wgmma_unusable(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const int sms = device_sm_count();
  int cases = 0;
  const std::vector<Problem> problems = wgmma_problems();
  for (Problem p : problems)
    for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.layout = layout;
        p.dtype = dt;
        const HostData data = make_host_data(p, 5);
        testing::DeviceBuffers c(p, data);
        const MmaType type = mma_type_of(dt);
        const Im2colGeometry r = mma_repacked_geometry(c.g, c.bytes);
        ASSERT_EQ(wgmma_conv_unsupported_reason(r, c.bytes), "") << p.str();
        // As the backend runs it: repacked where the layout needs it (the copy rounds tf32 to
        // nearest), else read as they lie, tf32 then rounded by the kernel in shared memory.
        const bool repack = mma_needs_repack(c.g, type);
        const bool round_in_smem = type == MmaType::tf32 && !repack;
        bench::DeviceBuffer<unsigned char> src_r(
            repack ? mma_repacked_src_elements(c.g, type) * std::size_t(c.bytes) : 0);
        bench::DeviceBuffer<unsigned char> wei_r(
            repack ? mma_repacked_wei_elements(c.g, type) * std::size_t(c.bytes) : 0);
        if (repack)
          launch_mma_repack(c.g, type, c.src.data(), c.wei.data(), src_r.data(), wei_r.data(),
                            c.stream.get());
        const void* src = repack ? src_r.data() : c.src.data();
        const void* wei = repack ? wei_r.data() : c.wei.data();
        // Both tiles, with and without split-K; and the persistent loop with several units per
        // block (a grid of 2), whose producer runs into the next unit during the epilogue.
        for (int bn : {64, 128})
          for (int splits : {1, 3})
            for (bool small_grid : {false, true}) {
              WgmmaConvPlan plan = wgmma_conv_plan(r, c.bytes, sms, bn, splits);
              if (small_grid) plan.grid = std::min(plan.grid, 2);
              const std::string what =
                  p.str() + " " + bench::to_string(dt) + " " + wgmma_conv_plan_name(plan);
              const WgmmaConvMaps maps = make_wgmma_conv_maps(r, type, plan, src, wei);
              bench::DeviceBuffer<float> partial(wgmma_conv_partial_elements(c.g, plan));
              if (partial.bytes() > 0) partial.fill_bytes_async(0xFF, c.stream.get());
              EXPECT_EQ(c.check(data,
                                [&](cudaStream_t s) {
                                  launch_wgmma_conv(c.g, type, plan, maps, round_in_smem,
                                                    c.dst.data(), partial.data(), s);
                                  launch_mma_split_reduce(
                                      c.g, type, MmaPlan{MmaTileShape::t128x128, plan.splits},
                                      partial.data(), c.dst.data(), s);
                                }),
                        "")
                  << what << ", grid " << plan.grid;
              ++cases;
            }
      }
  EXPECT_EQ(cases, int(problems.size()) * 3 * 2 * 8);  // none skipped
}

// tf32 read as it lies (nhwc, no repack): the kernel rounds to nearest in shared memory. Inputs
// 1 + 2^-11 + 2^-12 round up to 1 + 2^-10 and truncate to 1; with weights 1 every output (no
// padding: 9 C taps each) is 9 C (1 + 2^-10) rounded, 9 C truncated: 0.1% apart, which the tf32
// tolerance of the random tests would let pass.
TEST(WgmmaConv, Tf32OperandsAreRoundedToNearestInSharedMemory) {
  if (const std::string why = wgmma_unusable(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const int sms = device_sm_count();
  Problem p = parse_problem("mb2ic64ih10oc64kh3");
  p.layout = Layout::nhwc;
  p.dtype = DataType::tf32;
  HostData data;
  data.src.assign(std::size_t(p.src_elements()), 1.0f + 0x1.8p-11f);  // 1 + 2^-11 + 2^-12
  data.wei.assign(std::size_t(p.wei_elements()), 1.0f);
  testing::DeviceBuffers c(p, data);
  ASSERT_FALSE(mma_needs_repack(c.g, MmaType::tf32));
  const Im2colGeometry r = mma_repacked_geometry(c.g, c.bytes);
  const WgmmaConvPlan plan = wgmma_conv_plan(r, c.bytes, sms);
  const WgmmaConvMaps maps =
      make_wgmma_conv_maps(r, MmaType::tf32, plan, c.src.data(), c.wei.data());
  bench::DeviceBuffer<float> partial(wgmma_conv_partial_elements(c.g, plan));
  c.dst.fill_bytes_async(0xFF, c.stream.get());
  launch_wgmma_conv(c.g, MmaType::tf32, plan, maps, true, c.dst.data(), partial.data(),
                    c.stream.get());
  launch_mma_split_reduce(c.g, MmaType::tf32, MmaPlan{MmaTileShape::t128x128, plan.splits},
                          partial.data(), c.dst.data(), c.stream.get());
  const std::vector<float> out = c.output();
  const double rounded = 9.0 * 64 * (1.0 + 0x1p-10);
  int off = 0;
  for (float v : out) off += std::fabs(double(v) - rounded) > 1e-5 * rounded;
  EXPECT_EQ(off, 0) << "of " << out.size() << " outputs, e.g. " << out[0] << " against " << rounded
                    << " rounded, " << 9.0 * 64 << " truncated";
}

// ---- Variant 11: 1x1 layers on the GEMM engine -------------------------------------------------

// Every one runs in both layouts: IC and OC multiples of 8 (nhwc's rows), H*W too (nchw's).
std::vector<Problem> gemm_1x1_problems() {
  std::vector<Problem> out;
  for (const char* text : {
           "mb2ic64ih20oc128kh1",       // one k block, nchw n = 400 past a 128/256 tile edge
           "mb3ic24ih5iw8oc40kh1kw1",   // k 24 (under one block), nhwc m = 120 under one tile
           "mb1ic200ih16oc264kh1",      // k 200 (last block partial), OC 264 past 256
           "mb5ic72ih12iw6oc16kh1kw1",  // OC 16 (nchw m), nhwc m = 360 past two tiles
           "mb2ic1000ih8oc136kh1",      // k 1000: 16 blocks, split-K's long runs
           "mb33ic16ih8oc8kh1",         // 33 images of 64 pixels, OC 8: the batch walk
       })
    out.push_back(parse_problem(text));
  return out;
}

// MYCONV_PDL: 0 turns programmatic dependent launch off (without asking the device); another
// value than 0 or 1 is refused. (1 or unset: on where the device is sm_90+, which the GPU tests
// run.)
TEST(PdlLaunch, TheSwitchParsesOrIsRefused) {
  const char* before = std::getenv("MYCONV_PDL");
  const std::string saved = before ? before : "";
  ::setenv("MYCONV_PDL", "0", 1);
  EXPECT_FALSE(pdl_launch());
  for (const char* bad : {"2", "yes", "01"}) {
    ::setenv("MYCONV_PDL", bad, 1);
    EXPECT_THROW(pdl_launch(), std::invalid_argument) << bad;
  }
  if (before)
    ::setenv("MYCONV_PDL", saved.c_str(), 1);
  else
    ::unsetenv("MYCONV_PDL");
}

TEST(Gemm1x1, TheGpuTestsProblemsAreTaken) {
  for (Problem p : gemm_1x1_problems())
    for (DataType dt : {DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = dt;
        p.layout = layout;
        EXPECT_EQ(gemm_1x1_unsupported_reason(p), "") << p.str();
      }
}

std::string engine_unusable() {
  if (const std::string why = testing::gpu_unavailable_reason(); !why.empty()) return why;
  return bench::gemm::gemm_sm90_unusable_reason();
}

TEST(Gemm1x1, EveryTypeLayoutTileAndSplitMatchesTheReference) {
  if (const std::string why = engine_unusable(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  namespace gemm = bench::gemm;
  const int sms = device_sm_count();
  int cases = 0;
  const std::vector<Problem> problems = gemm_1x1_problems();
  for (Problem p : problems)
    for (DataType dt : {DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.layout = layout;
        p.dtype = dt;
        const HostData data = make_host_data(p, 7);
        testing::DeviceBuffers c(p, data);
        const gemm::GemmShape shape = gemm_1x1_shape(p);
        const bool nchw = layout == Layout::nchw;
        const void* a = nchw ? c.wei.data() : c.src.data();
        const void* b = nchw ? c.src.data() : c.wei.data();
        std::vector<gemm::GemmPlan> plans;
        for (int bn : {128, 256})
          for (int splits : {1, 3}) plans.push_back(gemm::gemm_plan(shape, sms, bn, splits));
        for (int splits : {1, 3})
          plans.push_back(gemm::gemm_plan(shape, sms, 128, splits, gemm::GemmSchedule::pingpong));
        plans.push_back(gemm::gemm_auto_plan(shape, sms));
        for (int splits : {2, 3}) {  // summed in the kernel (128-wide tiles)
          plans.push_back(gemm::gemm_plan(shape, sms, 128, splits));
          plans.back().reduce_in_kernel = plans.back().splits > 1;
        }
        plans.push_back(gemm_1x1_plan(shape, sms));
        for (std::size_t i = 0, n = plans.size(); i < n; ++i) {  // a grid of 2: several units
          gemm::GemmPlan small = plans[i];
          small.grid = std::min(small.grid, 2);
          plans.push_back(small);
        }
        for (const gemm::GemmPlan& plan : plans) {
          const std::string what =
              p.str() + " " + bench::to_string(dt) + " " + gemm::gemm_plan_name(plan);
          bench::DeviceBuffer<unsigned char> workspace(gemm::gemm_workspace_bytes(shape, plan));
          workspace.fill_bytes_async(0xFF, c.stream.get());
          if (workspace.bytes() > 0)
            gemm::gemm_clear_counters(shape, plan, workspace.data(), c.stream.get());
          // Split-K summed in the kernel: a second launch on the counters the first left.
          for (int launch = 0; launch < (plan.reduce_in_kernel ? 2 : 1); ++launch)
            EXPECT_EQ(c.check(data,
                              [&](cudaStream_t s) {
                                gemm::gemm_sm90(dt == DataType::fp16 ? bench::MmaDtype::fp16
                                                                     : bench::MmaDtype::bf16,
                                                shape, plan, a, b, c.dst.data(), gemm::Epilogue{},
                                                workspace.bytes() > 0 ? workspace.data() : nullptr,
                                                s);
                              }),
                      "")
                << what << " launch " << launch;
          ++cases;
        }
      }
  EXPECT_EQ(cases, int(problems.size()) * 2 * 2 * 20);  // none skipped
}

// The backend: --variant 11 runs every one and says so; auto runs the variant its rule chooses;
// variant 11 refuses the rest with the reason (a 3x3 filter, fp32, H*W = 49 in nchw).
TEST(Gemm1x1, TheBackendRunsItFixedAndChosen) {
  if (const std::string why = engine_unusable(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  CaseOptions options = bench::testing::quick_case_options();
  for (const char* variant : {"11", "auto"}) {
    BackendOptions o;
    o.variant = variant;
    const std::unique_ptr<Backend> backend = make_im2col_gemm_cuda_backend(o);
    for (Problem p : gemm_1x1_problems())
      for (DataType dt : {DataType::fp16, DataType::bf16})
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const HostData data = make_host_data(p, 17);
          const bench::Result r =
              run_case(backend.get(), "im2col_gemm_cuda", "cuda", "", p, data, options).result;
          SCOPED_TRACE(std::string("--variant ") + variant + " " + p.str() + ": " +
                       bench::to_string(r.status) + " " + r.reason + " / " + r.algorithm);
          EXPECT_EQ(r.status, bench::Status::passed);
          // Fixed, variant 11; chosen, the variant the rule picks for this problem on this GPU
          // (variant 11 only where it measured faster: conv/cuda/variant_choice.hpp).
          const std::string named = std::string(variant) == "11"
                                        ? "v11 1x1 GEMM on the Hopper engine"
                                        : variant_name(choose_variant(p, variant_device()).variant);
          EXPECT_NE(r.algorithm.find(named), std::string::npos) << named;
        }
  }
  BackendOptions o;
  o.variant = "11";
  const std::unique_ptr<Backend> backend = make_im2col_gemm_cuda_backend(o);
  for (const char* text :
       {"mb2ic64ih20oc128kh3ph1dtfp16", "mb2ic64ih20oc128kh1", "mb2ic64ih7oc128kh1dtbf16"}) {
    const Support s = backend->check_support(parse_problem(text));
    EXPECT_FALSE(s.ok) << text;
    EXPECT_NE(s.reason.find("variant 11"), std::string::npos) << s.reason;
  }
}

}  // namespace
}  // namespace conv
