// Our CUDA kernels (conv/cuda/im2col_gemm_kernels.hpp), each launcher with each of its tiles,
// against the float64 reference: FP32 variants 1-3 in fp32, tensor-core variants 4-6 in tf32,
// fp16 and bf16, both layouts, on fixed and randomized problems (odd sizes, stride, padding,
// dilation, groups, batch 1..32, channel counts that do and do not fill vectors and tiles, K
// spanning many slices). The output is poisoned (NaN) before every run, and the poison is
// checked to read back as NaN in the storage type, so an element a kernel leaves unwritten fails.
// The backend around them (variant and dtype choice, support answers) is covered by
// tests/conv/test_backends_gpu.cpp. Skips, with the reason, where no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/data.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/conv/device_case.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv {
namespace {

using testing::gpu_unavailable_reason;
using testing::kernel_problems;

using DeviceCase = testing::DeviceBuffers;

MmaType mma_type_of(DataType dt) {
  return dt == DataType::fp16   ? MmaType::fp16
         : dt == DataType::bf16 ? MmaType::bf16
                                : MmaType::tf32;
}

TEST(Im2colGemmCuda, Fp32VariantsEveryTileMatchTheReference) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  int cases = 0;
  for (Problem p : kernel_problems())
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      p.layout = layout;
      p.dtype = DataType::fp32;
      const HostData data = make_host_data(p, 3);
      DeviceCase c(p, data);
      const Im2colGeometry& g = c.g;
      bench::DeviceBuffer<float> col(im2col_buffer_elements(g));
      const std::vector<Im2colRow> rows = im2col_row_table(g);
      bench::DeviceBuffer<Im2colRow> rows_d(rows.size());
      rows_d.upload_async(rows.data(), c.stream.get());
      const float* src = reinterpret_cast<const float*>(c.src.data());
      const float* wei = reinterpret_cast<const float*>(c.wei.data());
      float* dst = reinterpret_cast<float*>(c.dst.data());
      // Split-K (3 where K has 3 slices or more) writes partials that the reduction sums; the
      // partials are poisoned before each run.
      const int all_slices = (g.k + 7) / 8;
      const int splits = std::min(3, all_slices);
      bench::DeviceBuffer<float> partial(std::size_t(splits) * std::size_t(g.m) * g.oc);
      for (GemmTile tile : {GemmTile::t128x128, GemmTile::t64x128, GemmTile::t32x128})
        for (int split : {1, splits}) {
          if (split == splits && splits == 1) continue;
          const std::string what =
              p.str() + " " + gemm_tile_name(tile) + " split-K " + std::to_string(split);
          auto reduce = [&](cudaStream_t s) {
            if (split > 1) launch_fp32_split_reduce(g, split, partial.data(), dst, s);
          };
          partial.fill_bytes_async(0xFF, c.stream.get());
          EXPECT_EQ(c.check(data,
                            [&](cudaStream_t s) {
                              launch_im2col(g, src, col.data(), s);
                              launch_gemm_from_columns(g, tile, wei, col.data(), dst, s, split,
                                                       partial.data());
                              reduce(s);
                            }),
                    "")
              << "v1 " << what;
          partial.fill_bytes_async(0xFF, c.stream.get());
          EXPECT_EQ(c.check(data,
                            [&](cudaStream_t s) {
                              launch_implicit_gemm(g, tile, src, wei, dst, s, split,
                                                   partial.data());
                              reduce(s);
                            }),
                    "")
              << "v2 " << what;
          partial.fill_bytes_async(0xFF, c.stream.get());
          EXPECT_EQ(c.check(data,
                            [&](cudaStream_t s) {
                              launch_implicit_gemm_precomp(g, tile, src, wei, rows_d.data(), dst, s,
                                                           split, partial.data());
                              reduce(s);
                            }),
                    "")
              << "v3 " << what;
          cases += 3;
        }
    }
  EXPECT_GT(cases, 0);
}

TEST(Im2colGemmCuda, TensorCoreVariantsEveryTileTypeAndLayoutMatchTheReference) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  if (const std::string why = mma_kernels_unusable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  int cases = 0;
  for (Problem p : kernel_problems())
    for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.layout = layout;
        p.dtype = dt;
        const HostData data = make_host_data(p, 3);
        DeviceCase c(p, data);
        const Im2colGeometry& g = c.g;
        const MmaType type = mma_type_of(dt);
        bench::DeviceBuffer<unsigned char> col(mma_column_buffer_elements(g, type) *
                                               std::size_t(c.bytes));
        const std::vector<Im2colRow16> rows = im2col_row16_table(g);
        bench::DeviceBuffer<Im2colRow16> rows_d(rows.size());
        rows_d.upload_async(rows.data(), c.stream.get());
        // Variant 6: repacked tensors (poisoned: the GEMM must read only what the repack wrote),
        // or the originals where no repack is needed.
        const bool repack = mma_needs_repack(g, type);
        bench::DeviceBuffer<unsigned char> src_r(
            repack ? mma_repacked_src_elements(g, type) * std::size_t(c.bytes) : 0);
        bench::DeviceBuffer<unsigned char> wei_r(
            repack ? mma_repacked_wei_elements(g, type) * std::size_t(c.bytes) : 0);
        const std::vector<Im2colRow16> rows_r =
            im2col_row16_table(mma_repacked_geometry(g, c.bytes));
        bench::DeviceBuffer<Im2colRow16> rows_r_d(rows_r.size());
        rows_r_d.upload_async(rows_r.data(), c.stream.get());
        // Every tile without split-K, and with a split of 3 (at most one per slice) where the
        // kernel is the pipelined one.
        const int splits = std::min(3, mma_slices(g, c.bytes));
        bench::DeviceBuffer<float> partial(std::size_t(splits) * std::size_t(g.m) * g.oc);
        std::vector<MmaPlan> plans;
        for (MmaTileShape tile : kAllMmaTiles) {
          plans.push_back({tile, 1});
          if (splits > 1) plans.push_back({tile, splits});
        }
        for (const MmaPlan& plan : plans) {
          const std::string what = p.str() + " " + mma_instruction_name(type) + " " +
                                   mma_tile_text(plan.tile, c.bytes) + " split-K " +
                                   std::to_string(plan.splits);
          float* part = partial.data();
          // Split-K partials are poisoned before each run too: the reduction must read only
          // what this run's blocks wrote.
          partial.fill_bytes_async(0xFF, c.stream.get());
          if (plan.splits == 1 || mma_pipelined_gather(g, type)) {
            EXPECT_EQ(c.check(data,
                              [&](cudaStream_t s) {
                                launch_mma_implicit_gemm(g, type, plan, c.src.data(), c.wei.data(),
                                                         rows_d.data(), c.dst.data(), part, s);
                                launch_mma_split_reduce(g, type, plan, part, c.dst.data(), s);
                              }),
                      "")
                << "v4 " << what;
          }
          // The column buffer is poisoned too: the GEMM must read only what im2col wrote.
          col.fill_bytes_async(0xFF, c.stream.get());
          partial.fill_bytes_async(0xFF, c.stream.get());
          if (plan.splits == 1 || mma_pipelined_columns(g, type)) {
            EXPECT_EQ(c.check(data,
                              [&](cudaStream_t s) {
                                launch_mma_im2col(g, type, c.src.data(), col.data(), s);
                                launch_mma_gemm_from_columns(g, type, plan, c.wei.data(),
                                                             col.data(), c.dst.data(), part, s);
                                launch_mma_split_reduce(g, type, plan, part, c.dst.data(), s);
                              }),
                      "")
                << "v5 " << what;
          }
          src_r.fill_bytes_async(0xFF, c.stream.get());
          partial.fill_bytes_async(0xFF, c.stream.get());
          wei_r.fill_bytes_async(0xFF, c.stream.get());
          EXPECT_EQ(c.check(data,
                            [&](cudaStream_t s) {
                              if (repack)
                                launch_mma_repack(g, type, c.src.data(), c.wei.data(), src_r.data(),
                                                  wei_r.data(), s);
                              launch_mma_repacked_implicit_gemm(
                                  g, type, plan, repack ? src_r.data() : c.src.data(),
                                  repack ? wei_r.data() : c.wei.data(), rows_r_d.data(),
                                  c.dst.data(), part, s);
                              launch_mma_split_reduce(g, type, plan, part, c.dst.data(), s);
                            }),
                    "")
              << "v6 " << what;
          cases += 3;
        }
      }
  EXPECT_GT(cases, 0);
}

// A kernel that writes nothing must fail the check: the poison is what catches it.
TEST(Im2colGemmCuda, UnwrittenOutputIsCaught) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  for (DataType dt : bench::all_data_types()) {
    Problem p = parse_problem("mb2ic4ih9oc8kh3");
    p.dtype = dt;
    const HostData data = make_host_data(p, 3);
    DeviceCase c(p, data);
    EXPECT_NE(c.check(data, [](cudaStream_t) {}), "") << bench::to_string(dt);
  }
}

}  // namespace
}  // namespace conv
