// The depthwise kernels (conv/cuda/depthwise_kernels.hpp, variant 8 of im2col_gemm_cuda) against
// the float64 reference, on a GPU (skips, with the reason, where none is usable): MobileNet-v2's
// ten depthwise layers at batch 2, fixed problems (multipliers 2-4, 5x5, stride 2 and 3,
// dilation, non-square and odd sizes, outputs narrower than a cell, rows wider than shared
// memory, batch 1) and randomized depthwise problems; fp32, tf32 (FP32 math), fp16 and bf16;
// nchw and nhwc; the automatic configuration and forced ones (the generic kernel for 3x3 / 5x5,
// small blocks with row and column tiles, one plane per block, a one-block grid-stride loop).
// The output is poisoned (NaN) before every run; every result must match the reference and be
// bit-identical across runs and configurations (each output's taps are summed in the same order
// by every configuration). Also: an unwritten output fails the check, and no kernel spills.
// The configuration and the index math are tested without a GPU by test_depthwise_config.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_kernels.hpp"
#include "conv/cuda/small_conv_kernels.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/device_case.hpp"
#include "tests/random_problems.hpp"

namespace conv {
namespace {

std::vector<Problem> fixed_problems() {
  std::vector<Problem> out;
  for (const char* text : {
           // MobileNet-v2's depthwise layers (experiments/shapes/mobilenet_v2.txt) at batch 2
           "g32mb2ic32ih112oc32kh3ph1",
           "g96mb2ic96ih112oc96kh3sh2ph1",
           "g144mb2ic144ih56oc144kh3ph1",
           "g144mb2ic144ih56oc144kh3sh2ph1",
           "g192mb2ic192ih28oc192kh3ph1",
           "g192mb2ic192ih28oc192kh3sh2ph1",
           "g384mb2ic384ih14oc384kh3ph1",
           "g576mb2ic576ih14oc576kh3ph1",
           "g576mb2ic576ih14oc576kh3sh2ph1",
           "g960mb2ic960ih7oc960kh3ph1",
           "g960mb1ic960ih7oc960kh3ph1",                // batch 1
           "g8mb2ic8ih10oc8kh3ph1",                     // 3x3 s1, few channels
           "g4mb1ic4ih9oc8kh3sh2ph1",                   // multiplier 2, stride 2
           "g16mb2ic16ih20oc32kh3ph1",                  // multiplier 2, vectors of output channels
           "g3mb2ic3ih13oc12kh5ph2",                    // 5x5 s1, multiplier 4
           "g24mb2ic24ih17iw11oc24kh5kw5sh2sw2ph2pw2",  // 5x5 s2, non-square input
           "g32mb1ic32ih15oc32kh5ph2",                  // 5x5 s1 nhwc vectors
           "g6mb1ic6ih12oc18kh3ph2dh1",                 // dilation 2, multiplier 3: generic
           "g8mb3ic8ih9oc8kh7ph3",                      // 7x7: generic
           "g4mb1ic4ih9iw14oc4kh3kw5ph1pw2",            // non-square kernel: generic
           "g12mb2ic12ih8oc12kh3sh3ph1",                // stride 3: generic
           "g2mb1ic2ih11iw11oc2kh3kw3sh1sw2ph1pw1",     // unequal strides: generic
           "g1mb1ic1ih1oc1kh1",                         // one element
           "g7mb2ic7ih6iw5oc7kh2kw2",                   // even kernel, odd channels
           "g16mb1ic16ih1iw40oc16kh1kw3pw1",            // one row
           "g5mb2ic5ih3oc10kh3",                        // 1x1 output
           "g4mb1ic4ih9iw3000oc4kh3kw3ph1pw1",          // rows wider than shared memory
           "g3mb2ic3ih10oc3kh3sh2",                     // stride 2 leaves the last row unused
           "g10mb3ic10ih7oc10kh3ph1",                   // whole 7x7 planes, a short last block
           "g36mb2ic36ih21oc36kh3ph1",                  // OW = 21: no vector stores
       })
    out.push_back(parse_problem(text));
  return out;
}

// The fixed problems, then 24 random depthwise ones: channels 1-40, multiplier 1-4, sizes 1-30.
std::vector<Problem> test_problems() {
  std::vector<Problem> fixed = fixed_problems();
  const std::size_t count = fixed.size() + 24;
  return testing::limited_by_environment(testing::randomized_depthwise_problems(
      std::move(fixed), count, 8088, 40, 30, kDepthwiseMaxMultiplier));
}

using testing::gpu_unavailable_reason;

// One problem's device buffers in the storage type of its dtype.
struct DeviceCase : testing::DeviceBuffers {
  using DeviceBuffers::DeviceBuffers;

  // Launches the kernel for the storage type with configuration c, or the automatic one.
  void launch(const DepthwiseConfig* c) {
    with_storage_type([&](auto* x, auto* w, auto* y) {
      using T = std::remove_pointer_t<decltype(y)>;
      if (c)
        launch_depthwise<T>(g, *c, x, w, y, stream.get());
      else
        launch_depthwise<T>(g, x, w, y, stream.get());
    });
  }

  // The shared check (testing::DeviceBuffers::check) of one launch with configuration c.
  std::string check(const HostData& data, const DepthwiseConfig* c, std::vector<float>* out) {
    return DeviceBuffers::check(
        data, [&](cudaStream_t) { launch(c); }, out);
  }
};

using testing::bit_equal;

std::vector<DepthwiseChoice> forced_choices() {
  std::vector<DepthwiseChoice> out;
  DepthwiseChoice generic;
  generic.allow_specialized = false;
  out.push_back(generic);
  DepthwiseChoice small;  // nchw: row and column tiles of 8 cells
  small.max_cells = 8;
  out.push_back(small);
  DepthwiseChoice one_plane;  // nchw: one plane per block, rows staged
  one_plane.max_planes = 1;
  out.push_back(one_plane);
  DepthwiseChoice one_block;  // nhwc: a single block loops over every tile
  one_block.max_blocks = 1;
  out.push_back(one_block);
  return out;
}

TEST(DepthwiseCuda, MatchesTheReferenceInEveryConfiguration) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const int sms = small_conv_sm_count();
  int cases = 0;
  for (Problem p : test_problems())
    for (DataType dt : bench::all_data_types())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = dt;
        p.layout = layout;
        const HostData data = make_host_data(p, 17);
        DeviceCase dc(p, data);
        const Im2colGeometry& g = dc.g;
        ASSERT_TRUE(depthwise_supported(g)) << p.str() << ": " << depthwise_unsupported_reason(g);

        // The automatic configuration, twice: bit-identical (deterministic).
        std::vector<float> first, again;
        const std::string name = depthwise_name(g, dc.bytes);
        EXPECT_EQ(dc.check(data, nullptr, &first), "") << p.str() << " " << name;
        EXPECT_EQ(dc.check(data, nullptr, &again), "") << p.str() << " " << name;
        EXPECT_TRUE(bit_equal(first, again)) << p.str() << ": not deterministic";
        ++cases;

        for (const DepthwiseChoice& choice : forced_choices()) {
          const DepthwiseConfig c = depthwise_config(g, dc.bytes, sms, choice);
          const std::string what = p.str() + " " + depthwise_config_name(g, c);
          std::vector<float> out;
          EXPECT_EQ(dc.check(data, &c, &out), "") << what;
          EXPECT_TRUE(bit_equal(out, first)) << what << ": differs from the automatic one";
          ++cases;
        }
      }
  EXPECT_GT(cases, 0);
}

TEST(DepthwiseCuda, UnwrittenOutputIsCaught) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  for (DataType dt : bench::all_data_types()) {
    Problem p = parse_problem("g8mb2ic8ih10oc8kh3ph1");
    p.dtype = dt;
    const HostData data = make_host_data(p, 3);
    DeviceCase dc(p, data);
    dc.dst.fill_bytes_async(0xFF, dc.stream.get());
    const std::vector<float> out = dc.output();
    const bench::Correctness r =
        bench::compare(out.data(), data.ref.data(), out.size(),
                       bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
    EXPECT_FALSE(r.passed) << bench::to_string(dt);
  }
}

TEST(DepthwiseCuda, LaunchersRefuseWhatDoesNotFit) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const Problem dense = parse_problem("mb2ic4ih9oc8kh3");
  DeviceCase dc(dense, make_host_data(dense, 3));
  EXPECT_THROW(dc.launch(nullptr), std::invalid_argument);
  const Problem dw = parse_problem("g8mb2ic8ih10oc8kh3ph1");
  DeviceCase ok(dw, make_host_data(dw, 3));
  DepthwiseConfig c = depthwise_config(ok.g, ok.bytes, small_conv_sm_count());
  c.smem_bytes = 0;
  EXPECT_THROW(ok.launch(&c), std::invalid_argument);
}

// Every instantiation: one problem per kernel and layout, both nhwc load forms.
TEST(DepthwiseCuda, KernelsDoNotSpill) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  int kernels = 0;
  for (const char* text :
       {"g8mb1ic8ih10oc8kh3ph1", "g8mb1ic8ih10oc8kh3sh2ph1", "g8mb1ic8ih10oc8kh5ph2",
        "g8mb1ic8ih10oc8kh5sh2ph2", "g8mb1ic8ih10oc8kh7ph3", "g7mb1ic7ih10oc14kh3ph1",
        "g7mb1ic7ih10oc14kh3sh2ph1", "g7mb1ic7ih10oc14kh5ph2", "g7mb1ic7ih10oc14kh5sh2ph2",
        "g7mb1ic7ih10oc14kh7ph3"})
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      Problem p = parse_problem(text);
      p.layout = layout;
      const Im2colGeometry g = make_im2col_geometry(p);
      const DepthwiseConfig c4 = depthwise_config(g, 4, 132), c2 = depthwise_config(g, 2, 132);
      for (const std::string& res :
           {depthwise_kernel_resources<float>(c4), depthwise_kernel_resources<__half>(c2),
            depthwise_kernel_resources<__nv_bfloat16>(c2)}) {
        EXPECT_NE(res.find(" 0 B local"), std::string::npos)
            << p.str() << " " << depthwise_config_name(g, c4) << ": " << res;
        ++kernels;
      }
    }
  EXPECT_EQ(kernels, 60);
}

}  // namespace
}  // namespace conv
