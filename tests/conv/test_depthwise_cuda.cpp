// The depthwise kernels (conv/cuda/depthwise_kernels.hpp, variant 8 of im2col_gemm_cuda: the
// staged kernels 8.1, the strip kernels 8.2 and 8.3, the whole-plane kernel 8.4, the
// whole-image kernel 8.5, the direct kernel 8.6) against the float64 reference, on a GPU (skips,
// with the reason, where none is usable): MobileNet-v2's ten depthwise layers at batch 2, fixed
// problems (multipliers 2-4, 5x5, stride 2 and 3, dilation, non-square and odd sizes, outputs
// narrower than a cell, rows wider than shared memory, batch 1), randomized depthwise problems and
// randomized 3x3 problems of the strips' kind (stride 1 or 2, channels in 16-byte vectors or not,
// odd sizes); fp32, tf32 (FP32 math), fp16 and bf16; nchw and nhwc; the automatic configuration and
// forced ones (8.1: the generic kernel for 3x3 / 5x5, small blocks with row and column tiles, one
// plane per block, a one-block grid-stride loop; 8.2 where it runs: bands of 1, 2, 3 and 5 rows,
// every nchw strip shape; 8.3 where it runs: those bands with blocks of 1, 3 or all strips; 8.4
// where it runs: the automatic planes per block, the least aligned count, and at most 3; 8.5 where
// it runs: the automatic channel words per block, at most 4 and 8; 8.6 where it runs: the automatic
// shape, items of 1 x 2, 1 x 4 and 2 x 2 outputs, 4 and 8 channels per thread, 8 and 32 channel
// vectors per block, 0 and 2 blocks per SM asked). The output is poisoned (NaN) before every run;
// every result must match the reference and be bit-identical across runs, configurations and the
// two families (each output's taps are summed in the same order by every kernel). Also: an
// unwritten output fails the check, misaligned tensors are refused, and no kernel spills. The
// configuration and the index math are tested without a GPU by test_depthwise_config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_kernels.hpp"
#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_strip_config.hpp"
#include "conv/cuda/small_conv_kernels.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/conv/device_case.hpp"
#include "tests/conv/random_problems.hpp"

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

// Random 3x3 problems of the strip kernels' kind: stride 1 or 2, padding 1 (sometimes 0 or 2:
// nhwc strips, nchw 8.1), channels mostly multiples of 8 (16-byte vectors of every dtype),
// sizes 1-40, batch 1-3.
std::vector<Problem> strip_problems(std::size_t count, unsigned seed) {
  std::vector<Problem> out;
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < count) {
    Problem p;
    p.g = pick(0, 3) == 0 ? pick(1, 40) : 8 * pick(1, 6);
    p.ic = p.oc = p.g;
    p.mb = pick(1, 3);
    p.ih = pick(1, 40);
    p.iw = pick(1, 40);
    p.kh = p.kw = 3;
    p.sh = p.sw = pick(1, 2);
    p.ph = pick(0, 4) == 0 ? pick(0, 2) : 1;
    p.pw = pick(0, 4) == 0 ? pick(0, 2) : 1;
    if (p.validate().empty() && p.unsupported_reason().empty()) out.push_back(p);
  }
  return out;
}

// The fixed problems, then 24 random depthwise ones (channels 1-40, multiplier 1-4, sizes 1-30)
// and 24 random ones of the strips' kind.
std::vector<Problem> test_problems() {
  std::vector<Problem> fixed = fixed_problems();
  const std::size_t count = fixed.size() + 24;
  std::vector<Problem> out = testing::randomized_depthwise_problems(
      std::move(fixed), count, 8088, 40, 30, kDepthwiseMaxMultiplier);
  for (const Problem& p : strip_problems(24, 8089)) out.push_back(p);
  return testing::limited_by_environment(std::move(out));
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

// Forced configurations of both families (8.2 only where the strips run g).
std::vector<DepthwiseChoice> forced_choices(const Im2colGeometry& g, int bytes) {
  std::vector<DepthwiseChoice> out;
  DepthwiseChoice staged;
  staged.sub_variant = 1;
  out.push_back(staged);
  DepthwiseChoice generic = staged;
  generic.allow_specialized = false;
  out.push_back(generic);
  DepthwiseChoice small = staged;  // nchw: row and column tiles of 8 cells
  small.max_cells = 8;
  out.push_back(small);
  DepthwiseChoice one_plane = staged;  // nchw: one plane per block, rows staged
  one_plane.max_planes = 1;
  out.push_back(one_plane);
  DepthwiseChoice one_block = staged;  // nhwc: a single block loops over every tile
  one_block.max_blocks = 1;
  out.push_back(one_block);
  if (depthwise_plane_unsupported_reason(g, bytes).empty()) {
    DepthwiseChoice plane;  // 8.4: the automatic planes per block, the least, and 3 at most
    plane.sub_variant = 4;
    for (int most : {0, 1, 3}) {
      plane.plane_planes = most;
      out.push_back(plane);
    }
  }
  if (depthwise_image_unsupported_reason(g, bytes).empty()) {
    DepthwiseChoice image;  // 8.5: the automatic channel words per block, at most 4 and 8
    image.sub_variant = 5;
    for (int most : {0, 4, 8}) {
      image.image_words = most;
      out.push_back(image);
    }
  }
  if (depthwise_direct_unsupported_reason(g, bytes).empty()) {
    DepthwiseChoice direct;  // 8.6
    direct.sub_variant = 6;
    out.push_back(direct);
    for (int pixels : {2, 4})
      for (int vec : {4, 8})
        for (int words : {8, 32})
          for (int min_blocks : {0, 2}) {
            direct.direct = DepthwiseDirectChoice{pixels, vec, words, min_blocks, 1};
            out.push_back(direct);
          }
    for (int vec : {4, 8})  // 2 x 2 items
      for (int min_blocks : {0, 2}) {
        direct.direct = DepthwiseDirectChoice{2, vec, 0, min_blocks, 2};
        out.push_back(direct);
      }
  }
  if (!depthwise_strip_unsupported_reason(g, bytes).empty()) return out;
  DepthwiseChoice strip;
  strip.sub_variant = 2;
  for (int band : {1, 2, 3, 5}) {
    strip.strip_band = band;
    out.push_back(strip);
  }
  if (!g.nhwc)
    for (const DepthwiseStripShape& shape : kDepthwiseStripNchwShapes)
      if (shape.stride == g.sh) {
        strip.strip_band = 2;
        strip.strip_pixels = shape.pixels;
        out.push_back(strip);
      }
  if (!depthwise_pipe_unsupported_reason(g, bytes).empty()) return out;
  DepthwiseChoice pipe;  // 8.3: bands, and blocks of 1 or 3 strips (several column tiles)
  pipe.sub_variant = 3;
  for (int band : {1, 2, 3, 5})
    for (int strips : {0, 1, 3}) {
      pipe.strip_band = band;
      pipe.pipe_strips = strips;
      out.push_back(pipe);
    }
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

        for (const DepthwiseChoice& choice : forced_choices(g, dc.bytes)) {
          const DepthwiseConfig c = depthwise_config(g, dc.bytes, sms, choice);
          if (c.sub_variant == 2 && c.strip.pixels == 0) continue;  // that strip does not fit
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
  DepthwiseChoice staged;
  staged.sub_variant = 1;
  DepthwiseConfig c = depthwise_config(ok.g, ok.bytes, small_conv_sm_count(), staged);
  c.smem_bytes = 0;
  EXPECT_THROW(ok.launch(&c), std::invalid_argument);
  // The strip kernels refuse tensors off their vectors' alignment.
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    Problem q = parse_problem("g16mb1ic16ih16oc16kh3ph1");
    q.layout = layout;
    q.dtype = DataType::fp16;
    DeviceCase dq(q, make_host_data(q, 3));
    DepthwiseChoice strip;
    strip.sub_variant = 2;
    const DepthwiseConfig s = depthwise_config(dq.g, dq.bytes, small_conv_sm_count(), strip);
    ASSERT_EQ(s.sub_variant, 2);
    const __half* src = reinterpret_cast<const __half*>(dq.src.data());
    const __half* wei = reinterpret_cast<const __half*>(dq.wei.data());
    __half* dst = reinterpret_cast<__half*>(dq.dst.data());
    EXPECT_THROW(launch_depthwise<__half>(dq.g, s, src + 1, wei, dst, dq.stream.get()),
                 std::invalid_argument)
        << to_string(layout);
    EXPECT_THROW(launch_depthwise<__half>(dq.g, s, src, wei, dst + 1, dq.stream.get()),
                 std::invalid_argument)
        << to_string(layout);
  }
}

// Every instantiation: one problem per kernel and layout, both nhwc load forms (8.1), every
// strip shape (8.2).
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
      DepthwiseChoice staged;
      staged.sub_variant = 1;
      const DepthwiseConfig c4 = depthwise_config(g, 4, 132, staged),
                            c2 = depthwise_config(g, 2, 132, staged);
      for (const std::string& res :
           {depthwise_kernel_resources<float>(g, c4), depthwise_kernel_resources<__half>(g, c2),
            depthwise_kernel_resources<__nv_bfloat16>(g, c2)}) {
        EXPECT_NE(res.find(" 0 B local"), std::string::npos)
            << p.str() << " " << depthwise_config_name(g, c4) << ": " << res;
        ++kernels;
      }
    }
  EXPECT_EQ(kernels, 60);
  // The strips: nhwc at both strides, every nchw shape (W = 112 fits them all).
  int strips = 0;
  for (Layout layout : {Layout::nchw, Layout::nhwc})
    for (int stride : {1, 2}) {
      Problem p =
          parse_problem(stride == 1 ? "g16mb1ic16ih112oc16kh3ph1" : "g16mb1ic16ih112oc16kh3sh2ph1");
      p.layout = layout;
      const Im2colGeometry g = make_im2col_geometry(p);
      for (int bytes : {4, 2}) {
        DepthwiseChoice strip;
        strip.sub_variant = 2;
        std::vector<DepthwiseConfig> configs;
        if (layout == Layout::nhwc) configs.push_back(depthwise_config(g, bytes, 132, strip));
        for (const DepthwiseStripShape& shape : kDepthwiseStripNchwShapes) {
          if (layout == Layout::nhwc || shape.stride != stride) continue;
          strip.strip_pixels = shape.pixels;
          DepthwiseConfig c = depthwise_config(g, bytes, 132, strip);
          c.strip.load_vec = shape.load_vec > 0 ? shape.load_vec : 16 / bytes;
          c.strip.store_vec = std::max(1, c.strip.load_vec / stride);
          configs.push_back(c);
        }
        for (const DepthwiseConfig& c : configs) {
          std::vector<std::string> res;
          if (bytes == 4) {
            res.push_back(depthwise_kernel_resources<float>(g, c));
          } else {
            res.push_back(depthwise_kernel_resources<__half>(g, c));
            res.push_back(depthwise_kernel_resources<__nv_bfloat16>(g, c));
          }
          for (const std::string& r : res) {
            EXPECT_NE(r.find(" 0 B local"), std::string::npos)
                << p.str() << " " << depthwise_config_name(g, c) << ": " << r;
            ++strips;
          }
        }
      }
    }
  EXPECT_EQ(strips, 24);  // (2 nhwc strides + 6 nchw shapes) x (fp32, fp16, bf16)
  // The pipelined nhwc kernel (8.3) at both strides.
  int pipes = 0;
  for (int stride : {1, 2}) {
    Problem p =
        parse_problem(stride == 1 ? "g32mb1ic32ih56oc32kh3ph1" : "g32mb1ic32ih56oc32kh3sh2ph1");
    p.layout = Layout::nhwc;
    const Im2colGeometry g = make_im2col_geometry(p);
    DepthwiseChoice pipe;
    pipe.sub_variant = 3;
    const DepthwiseConfig c4 = depthwise_config(g, 4, 132, pipe),
                          c2 = depthwise_config(g, 2, 132, pipe);
    for (const std::string& r :
         {depthwise_kernel_resources<float>(g, c4), depthwise_kernel_resources<__half>(g, c2),
          depthwise_kernel_resources<__nv_bfloat16>(g, c2)}) {
      EXPECT_NE(r.find(" 0 B local"), std::string::npos) << p.str() << ": " << r;
      ++pipes;
    }
  }
  EXPECT_EQ(pipes, 6);
  // The whole-plane nchw kernel (8.4): both strides, 7 and 8 outputs per item.
  int planes = 0;
  for (const char* text : {"g16mb1ic16ih14oc16kh3ph1", "g16mb1ic16ih16oc16kh3ph1",
                           "g16mb1ic16ih14oc16kh3sh2ph1", "g16mb1ic16ih32oc16kh3sh2ph1"}) {
    const Im2colGeometry g = make_im2col_geometry(parse_problem(text));
    DepthwiseChoice plane;
    plane.sub_variant = 4;
    const DepthwiseConfig c4 = depthwise_config(g, 4, 132, plane),
                          c2 = depthwise_config(g, 2, 132, plane);
    for (const std::string& r :
         {depthwise_kernel_resources<float>(g, c4), depthwise_kernel_resources<__half>(g, c2),
          depthwise_kernel_resources<__nv_bfloat16>(g, c2)}) {
      EXPECT_NE(r.find(" 0 B local"), std::string::npos) << text << ": " << r;
      ++planes;
    }
  }
  EXPECT_EQ(planes, 12);
  // The whole-image nhwc kernel (8.5): both strides, 7 and 8 outputs per item.
  int images = 0;
  for (const char* text : {"g16mb1ic16ih14oc16kh3ph1", "g16mb1ic16ih16oc16kh3ph1",
                           "g16mb1ic16ih14oc16kh3sh2ph1", "g16mb1ic16ih32oc16kh3sh2ph1"}) {
    Problem p = parse_problem(text);
    p.layout = Layout::nhwc;
    const Im2colGeometry g = make_im2col_geometry(p);
    DepthwiseChoice image;
    image.sub_variant = 5;
    const DepthwiseConfig c4 = depthwise_config(g, 4, 132, image),
                          c2 = depthwise_config(g, 2, 132, image);
    for (const std::string& r :
         {depthwise_kernel_resources<float>(g, c4), depthwise_kernel_resources<__half>(g, c2),
          depthwise_kernel_resources<__nv_bfloat16>(g, c2)}) {
      EXPECT_NE(r.find(" 0 B local"), std::string::npos) << text << ": " << r;
      ++images;
    }
  }
  EXPECT_EQ(images, 12);
  // The direct nhwc kernel (8.6): every kernel it instantiates.
  int directs = 0;
  for (const char* text : {"g16mb1ic16ih14oc16kh3ph1", "g16mb1ic16ih14oc16kh3sh2ph1"})
    for (int rows_pixels : {12, 14, 22})
      for (int vec : {4, 8})
        for (int min_blocks : {0, 2}) {
          const int rows = rows_pixels / 10, pixels = rows_pixels % 10;
          Problem p = parse_problem(text);
          p.layout = Layout::nhwc;
          const Im2colGeometry g = make_im2col_geometry(p);
          DepthwiseChoice direct;
          direct.sub_variant = 6;
          direct.direct = DepthwiseDirectChoice{pixels, vec, 0, min_blocks, rows};
          const DepthwiseConfig c4 = depthwise_config(g, 4, 132, direct),
                                c2 = depthwise_config(g, 2, 132, direct);
          for (const std::string& r :
               {depthwise_kernel_resources<float>(g, c4), depthwise_kernel_resources<__half>(g, c2),
                depthwise_kernel_resources<__nv_bfloat16>(g, c2)}) {
            EXPECT_NE(r.find(" 0 B local"), std::string::npos) << text << ": " << r;
            ++directs;
          }
        }
  EXPECT_EQ(directs, 72);
}

}  // namespace
}  // namespace conv
