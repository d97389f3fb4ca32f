// Variant 13, nhwc 1x1 layers as one streaming mma.sync GEMM kernel (conv/cuda/thin_1x1*).
// CPU tests (run everywhere): what it takes and refuses, its plan, the shared-memory row pitch
// that keeps a warp's weight loads free of bank conflicts, the permuted output columns.
// GPU tests (skip, with the reason, where no sm_80+ GPU with the mma.sync build is usable): tf32,
// fp16 and bf16 on problems with k under one chunk and past several, the last chunk part full,
// column runs of 4, 2 and 1 tiles, pixels that are not whole 16- or 32-row groups, OC 8 to 192,
// 33 images; one and two 16-row groups a warp; the plan's grid and grids of 1 and 3 blocks (each
// warp then walks many row groups, its next rows loaded ahead); the output poisoned first and
// compared with the float64 reference at the dtype's tolerance; then through the backend with
// --variant 13, and its refusals with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "conv/bench.hpp"
#include "conv/cuda/im2col_gemm_cuda.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/thin_1x1.hpp"
#include "conv/cuda/thin_1x1_config.hpp"
#include "conv/cuda/thin_1x1_kernels.hpp"
#include "conv/data.hpp"
#include "core/dtype.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/conv/device_case.hpp"

namespace conv {
namespace {

Problem nhwc(const char* text, DataType dt) {
  Problem p = parse_problem(text);
  p.layout = Layout::nhwc;
  p.dtype = dt;
  return p;
}

TEST(Thin1x1Config, WhatItTakes) {
  for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16}) {
    EXPECT_EQ(thin_1x1_unsupported_reason(nhwc("mb32ic32ih112oc16kh1", dt)), "");
    EXPECT_EQ(thin_1x1_unsupported_reason(nhwc("mb32ic24ih56oc144kh1", dt)), "");
    EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb32ic32ih56oc16kh3ph1", dt)), "");
    EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb32ic32ih56oc16kh1sh2", dt)), "");
    EXPECT_NE(thin_1x1_unsupported_reason(nhwc("g2mb32ic32ih56oc16kh1", dt)), "");
    EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb32ic32ih56oc12kh1", dt)), "");  // OC % 8
    Problem nchw = nhwc("mb32ic32ih112oc16kh1", dt);
    nchw.layout = Layout::nchw;
    EXPECT_NE(thin_1x1_unsupported_reason(nchw), "");
  }
  EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb32ic32ih112oc16kh1", DataType::fp32)), "");
  // Rows of whole 16-byte vectors: 20 fp16 channels (40 bytes) no, 4 tf32 ones yes.
  EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb2ic20ih9oc16kh1", DataType::fp16)), "");
  EXPECT_EQ(thin_1x1_unsupported_reason(nhwc("mb2ic4ih9oc16kh1", DataType::tf32)), "");
  // At most 512 bytes a row: 256 16-bit channels, 128 tf32 ones.
  EXPECT_EQ(thin_1x1_unsupported_reason(nhwc("mb2ic256ih9oc16kh1", DataType::fp16)), "");
  EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb2ic264ih9oc16kh1", DataType::fp16)), "");
  EXPECT_EQ(thin_1x1_unsupported_reason(nhwc("mb2ic128ih9oc16kh1", DataType::tf32)), "");
  EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb2ic136ih9oc16kh1", DataType::tf32)), "");
  // The weights in shared memory: 256 fp16 channels (8 chunks, a pitch of 9 x 64 bytes) by 112
  // rows is 64512 bytes, by 120 rows 69120 (over 64 KiB).
  EXPECT_EQ(thin_1x1_unsupported_reason(nhwc("mb2ic256ih9oc112kh1", DataType::fp16)), "");
  EXPECT_NE(thin_1x1_unsupported_reason(nhwc("mb2ic256ih9oc120kh1", DataType::fp16)), "");
}

TEST(Thin1x1Config, Plan) {
  const Thin1x1Plan a = thin_1x1_plan(nhwc("mb32ic32ih112oc16kh1", DataType::fp16), 1056);
  EXPECT_EQ(a.m, 32 * 112 * 112);
  EXPECT_EQ(a.chunks, 1);
  EXPECT_EQ(a.capacity, 1);
  EXPECT_EQ(a.groups_per_warp, 1);
  EXPECT_EQ(a.warp_tasks, 32 * 112 * 112 / 16);
  EXPECT_EQ(a.blocks, 1056);  // the resident blocks: fewer than the tasks fill
  EXPECT_EQ(a.smem_bytes, std::size_t(16 * 4 * 16));
  EXPECT_EQ(thin_1x1_plan_name(a),
            "m401408 n16 k32: 1 chunk of 64 bytes, 1 group of 16 rows a warp, 1056 blocks of 256");
  EXPECT_EQ(thin_1x1_plan(nhwc("mb32ic32ih112oc16kh1", DataType::fp16), 1056, 2).groups_per_warp,
            2);
  // tf32: the same 32 channels are 128 bytes, two chunks; 144 fp16 channels 5 chunks (the last
  // half full) in the 8-chunk kernel, one 16-row group a warp (two are compiled up to 2 chunks).
  EXPECT_EQ(thin_1x1_plan(nhwc("mb32ic32ih112oc16kh1", DataType::tf32), 1).chunks, 2);
  const Thin1x1Plan b = thin_1x1_plan(nhwc("mb3ic144ih5iw7oc24kh1kw1", DataType::bf16), 1000);
  EXPECT_EQ(b.chunks, 5);
  EXPECT_EQ(b.capacity, 8);
  EXPECT_EQ(b.groups_per_warp, 1);
  EXPECT_EQ(
      thin_1x1_plan(nhwc("mb3ic144ih5iw7oc24kh1kw1", DataType::bf16), 1000, 2).groups_per_warp, 1);
  EXPECT_EQ(b.warp_tasks, (105 + 15) / 16);
  EXPECT_EQ(b.blocks, 1);  // 7 tasks fill one block of 8 warps
  EXPECT_EQ(b.smem_bytes, std::size_t(24 * 20 * 16));
}

// A warp's 16-byte weight loads: lane (g, t) reads vector g * pitch + 4 c + t; shared memory
// serves 8 lanes a phase, which must fall on 8 distinct 16-byte bank groups (of 8).
TEST(Thin1x1Config, WeightRowsLoadWithoutBankConflicts) {
  for (int chunks = 1; chunks <= kThinMaxChunks; ++chunks) {
    const int pitch = thin_1x1_row_vectors(chunks);
    EXPECT_GE(pitch, 4 * chunks);
    for (int c = 0; c < chunks; ++c)
      for (int phase = 0; phase < 4; ++phase) {
        std::set<int> banks;
        for (int lane = 8 * phase; lane < 8 * phase + 8; ++lane)
          banks.insert((lane / 4 * pitch + 4 * c + lane % 4) % 8);
        EXPECT_EQ(banks.size(), 8u) << chunks << " chunks, chunk " << c << ", phase " << phase;
      }
  }
}

// The permuted columns of a run of q tiles: the MMA's (tile e, column g) pairs cover the run's 8q
// outputs once each, and lane t's accumulators (columns 2t, 2t + 1 of every tile) are its 2q
// contiguous outputs from n0 + 2qt, in tile order.
TEST(Thin1x1Config, OutputColumnsOfARunAreABijectionAndContiguousPerLane) {
  for (int q : {1, 2, 4}) {
    const int n0 = 24;
    std::set<int> seen;
    for (int e = 0; e < q; ++e)
      for (int g = 0; g < 8; ++g) {
        const int col = thin_1x1_output_column(n0, q, e, g);
        EXPECT_GE(col, n0);
        EXPECT_LT(col, n0 + 8 * q);
        seen.insert(col);
      }
    EXPECT_EQ(int(seen.size()), 8 * q);
    for (int t = 0; t < 4; ++t)
      for (int e = 0; e < q; ++e)
        for (int i = 0; i < 2; ++i)
          EXPECT_EQ(thin_1x1_output_column(n0, q, e, 2 * t + i), n0 + 2 * q * t + 2 * e + i);
  }
}

std::string mma_unusable() {
  if (const std::string why = testing::gpu_unavailable_reason(); !why.empty()) return why;
  return mma_kernels_unusable_reason();
}

// Every one runs in all three dtypes.
std::vector<const char*> gpu_problems() {
  return {
      "mb2ic32ih20oc16kh1",        // one chunk in 16-bit, two in tf32; 800 rows
      "mb3ic24ih5iw7oc40kh1kw1",   // k 24: a part chunk; 105 rows (not whole groups)
      "mb1ic120ih9oc72kh1",        // 4 chunks in 16-bit, 8 in tf32 (the last ones part full)
      "mb33ic16ih8oc8kh1",         // OC 8 (one column tile), 33 images
      "mb2ic64ih13oc192kh1",       // an expand: 24 column tiles
      "mb4ic96ih7oc24kh1",         // 3 chunks in the 4-chunk kernel (16-bit)
      "mb2ic128ih6iw10oc56kh1kw1"  // the most tf32 channels (8 full chunks); runs of 4, 2, 1 tiles
  };
}

MmaType type_of(DataType dt) {
  return dt == DataType::tf32   ? MmaType::tf32
         : dt == DataType::fp16 ? MmaType::fp16
                                : MmaType::bf16;
}

TEST(Thin1x1Cuda, EveryTypeAndGridMatchesTheReference) {
  MYCONV_SKIP_IF(mma_unusable());
  int cases = 0;
  for (const char* text : gpu_problems())
    for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16}) {
      const Problem p = nhwc(text, dt);
      ASSERT_EQ(thin_1x1_unsupported_reason(p), "") << text << " " << bench::to_string(dt);
      const HostData data = make_host_data(p, 11);
      testing::DeviceBuffers c(p, data);
      for (int groups : {0, 1, 2}) {  // the rule's, then each forced (2 falls back past 2 chunks)
        const Thin1x1Plan planned = thin_1x1_plan(p, 132 * 4, groups);
        for (int blocks : {planned.blocks, 1, 3}) {
          Thin1x1Plan t = planned;
          t.blocks = std::min(blocks, planned.blocks);
          EXPECT_EQ(c.check(data,
                            [&](cudaStream_t s) {
                              launch_thin_1x1(type_of(dt), t, c.src.data(), c.wei.data(),
                                              c.dst.data(), s);
                            }),
                    "")
              << text << " " << bench::to_string(dt) << " " << thin_1x1_plan_name(t);
          ++cases;
        }
      }
    }
  EXPECT_EQ(cases, int(gpu_problems().size()) * 3 * 3 * 3);
}

TEST(Thin1x1Cuda, TheBackendRunsItAndRefusesWithTheReason) {
  MYCONV_SKIP_IF(mma_unusable());
  BackendOptions o;
  o.variant = "13";
  const std::unique_ptr<Backend> backend = make_im2col_gemm_cuda_backend(o);
  const CaseOptions options = bench::testing::quick_case_options();
  for (const char* text : gpu_problems())
    for (DataType dt : {DataType::tf32, DataType::fp16, DataType::bf16}) {
      const Problem p = nhwc(text, dt);
      const HostData data = make_host_data(p, 23);
      const bench::Result r =
          run_case(backend.get(), "im2col_gemm_cuda", "cuda", "", p, data, options).result;
      EXPECT_EQ(r.status, bench::Status::passed) << p.str() << ": " << r.reason;
      EXPECT_NE(r.algorithm.find("v13 thin 1x1 GEMM"), std::string::npos) << r.algorithm;
    }
  Problem nchw = nhwc("mb2ic32ih20oc16kh1", DataType::fp16);
  nchw.layout = Layout::nchw;
  for (const Problem& p : {nchw, nhwc("mb2ic32ih20oc16kh3ph1", DataType::fp16),
                           nhwc("mb2ic32ih20oc16kh1", DataType::fp32)}) {
    const Support s = backend->check_support(p);
    EXPECT_FALSE(s.ok) << p.str();
    EXPECT_NE(s.reason.find("variant 13"), std::string::npos) << s.reason;
  }
}

}  // namespace
}  // namespace conv
