// The Hopper GEMM engine's plan and index math (core/cuda/gemm/gemm_config.hpp,
// core/cuda/wgmma_desc.hpp), checked on the CPU:
//   - the shared-memory descriptors' bit fields, and conv's K-major descriptor unchanged;
//   - a model of the layouts: where the copy engine's 128-byte swizzle puts each element of a
//     box, and where wgmma reads each element of its operands from a descriptor (the canonical
//     layouts of the PTX ISA's "Shared Memory Matrix Layout": K-major rows of 128 bytes in 8-row
//     groups SBO apart; MN-major rows of k, 64-wide column blocks LBO apart, 8-row k groups SBO
//     apart; the swizzle applied to the whole address). Every (warpgroup, k step) operand
//     element of A and B must be read where the copies put it;
//   - stages and shared memory, the tile order (every tile once), the tile rule, split-K's rule
//     and its k ranges (every k block in exactly one split), what is taken.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/cuda/gemm/gemm_config.hpp"
#include "core/cuda/wgmma_desc.hpp"

namespace bench::gemm {
namespace {

using sm90::sw128_address;

struct DescFields {
  std::uint32_t start, lbo, sbo, layout;
};
DescFields decode(std::uint64_t d) {
  return {std::uint32_t(d & 0x3FFF) << 4, std::uint32_t((d >> 16) & 0x3FFF) << 4,
          std::uint32_t((d >> 32) & 0x3FFF) << 4, std::uint32_t(d >> 62)};
}

TEST(WgmmaDesc, FieldsAndConvsEncoding) {
  const std::uint32_t addr = 0x12400;  // 1024-aligned, inside 228 KB
  // conv's variant 10 encoded K-major operands as below before the header was shared.
  const std::uint64_t conv = std::uint64_t((addr & 0x3FFFF) >> 4) | (std::uint64_t(1) << 16) |
                             (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
  EXPECT_EQ(sm90::sw128_desc(addr), conv);
  const DescFields k = decode(sm90::sw128_desc(addr + 96));
  EXPECT_EQ(k.start, addr + 96);
  EXPECT_EQ(k.sbo, 1024u);
  EXPECT_EQ(k.layout, 1u);  // 128-byte swizzle
  const DescFields mn = decode(sm90::sw128_mn_desc(addr + 2048, 8192));
  EXPECT_EQ(mn.start, addr + 2048);
  EXPECT_EQ(mn.lbo, 8192u);
  EXPECT_EQ(mn.sbo, 1024u);
  EXPECT_EQ(mn.layout, 1u);
  EXPECT_EQ(sw128_address(0), 0u);
  EXPECT_EQ(sw128_address(128 + 16), 128u);           // row 1: chunk 1 -> chunk 0
  EXPECT_EQ(sw128_address(7 * 128), 7 * 128 + 112u);  // row 7: chunk 0 -> chunk 7
}

// Where the copy engine puts element (inner i, outer row r) of a box of 128-byte rows written at
// byte `box` of the (1024-aligned) stage.
std::uint32_t box_position(std::uint32_t box, int i, int r) {
  return sw128_address(box + std::uint32_t(r) * 128 + std::uint32_t(i) * kElementBytes);
}
// Where wgmma reads element (row mn, k) of a K-major operand from descriptor d.
std::uint32_t kmajor_position(std::uint64_t d, int mn, int k) {
  const DescFields f = decode(d);
  return sw128_address(f.start + std::uint32_t(mn % 8) * 128 + std::uint32_t(mn / 8) * f.sbo +
                       std::uint32_t(k) * kElementBytes);
}
// Where wgmma reads element (k, column mn) of an MN-major operand from descriptor d.
std::uint32_t mnmajor_position(std::uint64_t d, int k, int mn) {
  const DescFields f = decode(d);
  return sw128_address(f.start + std::uint32_t(mn % 64) * kElementBytes +
                       std::uint32_t(mn / 64) * f.lbo + std::uint32_t(k % 8) * 128 +
                       std::uint32_t(k / 8) * f.sbo);
}

TEST(GemmLayout, EveryOperandElementIsReadWhereTheCopiesPutIt) {
  for (int bn : {128, 256}) {
    SCOPED_TRACE("BN " + std::to_string(bn));
    std::set<std::uint32_t> a_read, b_read;
    for (int step = 0; step < kBk / kStepK; ++step) {
      // A: warpgroup `half` reads rows 64 half + r, k 16 step + kk of the stage's A block.
      for (int half = 0; half < 2; ++half) {
        const std::uint64_t da = sm90::sw128_desc(std::uint32_t(a_operand_offset(half, step)));
        for (int r = 0; r < 64; ++r)
          for (int kk = 0; kk < kStepK; ++kk) {
            const std::uint32_t got = kmajor_position(da, r, kk);
            ASSERT_EQ(got, box_position(0, step * kStepK + kk, half * 64 + r))
                << "A row " << half * 64 + r << " k " << step * kStepK + kk;
            a_read.insert(got);
          }
      }
      // B: both warpgroups read k 16 step + kr, columns c of B's boxes (box c / 64).
      const std::uint64_t db =
          sm90::sw128_mn_desc(std::uint32_t(b_operand_offset(step)), std::uint32_t(b_box_bytes()));
      for (int kr = 0; kr < kStepK; ++kr)
        for (int c = 0; c < bn; ++c) {
          const std::uint32_t got = mnmajor_position(db, kr, c);
          ASSERT_EQ(got, box_position(std::uint32_t(b_box_offset(c / kBoxN)), c % kBoxN,
                                      step * kStepK + kr))
              << "B k " << step * kStepK + kr << " n " << c;
          b_read.insert(got);
        }
    }
    // Every element of the stage read once: A's block and B's boxes, nothing outside.
    EXPECT_EQ(a_read.size(), std::size_t(kBm * kBk));
    EXPECT_EQ(b_read.size(), std::size_t(kBk * bn));
    EXPECT_LT(*a_read.rbegin(), std::uint32_t(a_block_bytes()));
    EXPECT_GE(*b_read.begin(), std::uint32_t(a_block_bytes()));
    EXPECT_LT(*b_read.rbegin(), std::uint32_t(stage_bytes(bn)));
  }
}

// B K-major ([n][k] storage, GemmShape::b_k_major): the copies write box j as 64 n rows of 64 k
// (128 bytes); both warpgroups read n row c, k 16 step + kk through a K-major descriptor, as A's.
TEST(GemmLayout, KMajorBIsReadWhereTheCopiesPutIt) {
  for (int bn : {128, 256}) {
    SCOPED_TRACE("BN " + std::to_string(bn));
    std::set<std::uint32_t> b_read;
    for (int step = 0; step < kBk / kStepK; ++step) {
      const std::uint64_t db = sm90::sw128_desc(std::uint32_t(b_k_major_operand_offset(step)));
      for (int c = 0; c < bn; ++c)
        for (int kk = 0; kk < kStepK; ++kk) {
          const std::uint32_t got = kmajor_position(db, c, kk);
          ASSERT_EQ(got, box_position(std::uint32_t(b_box_offset(c / kBoxN)), step * kStepK + kk,
                                      c % kBoxN))
              << "B n " << c << " k " << step * kStepK + kk;
          b_read.insert(got);
        }
    }
    EXPECT_EQ(b_read.size(), std::size_t(kBk * bn));
    EXPECT_GE(*b_read.begin(), std::uint32_t(a_block_bytes()));
    EXPECT_LT(*b_read.rbegin(), std::uint32_t(stage_bytes(bn)));
  }
}

TEST(GemmPlan, StagesAndSharedMemory) {
  EXPECT_EQ(stage_bytes(256), 48 * 1024);
  EXPECT_EQ(stage_bytes(128), 32 * 1024);
  EXPECT_EQ(gemm_stages(256), 4);
  EXPECT_EQ(gemm_stages(128), 6);
  for (int bn : {128, 256}) {
    EXPECT_LE(gemm_smem_bytes(bn), kSmemLimit);
    EXPECT_EQ(stage_bytes(bn) % 1024, 0);  // every stage (and box) stays 1024-aligned
    EXPECT_EQ(b_box_offset(1) % 1024, 0);
    EXPECT_GE(kBarrierBytes, std::size_t(2 * gemm_stages(bn) * 8));
  }
  // The 64 x 64 tile: 16 KB a stage, 14 stages, B's box after A's 8 KB.
  EXPECT_EQ(stage_bytes(64, 64), 16 * 1024);
  EXPECT_EQ(gemm_stages(64, 64), kMaxStagesSmall);
  EXPECT_LE(gemm_smem_bytes(64, 64), kSmemLimit);
  EXPECT_EQ(b_box_offset(0, 64), 8 * 1024);
  EXPECT_GE(kBarrierBytes, std::size_t(2 * gemm_stages(64, 64) * 8));
}

TEST(GemmPlan, The64RowTile) {
  GemmShape s;
  s.m = 256;
  s.n = 1280;
  s.k = 1280;
  const GemmPlan p = gemm_plan(s, 132, 0, 0, GemmSchedule::cooperative, 64);
  EXPECT_EQ(p.bm, 64);
  EXPECT_EQ(p.bn, 64);
  EXPECT_EQ(p.tiles_m, 4);
  EXPECT_EQ(p.tiles_n, 20);
  EXPECT_EQ(p.tiles, 80);
  EXPECT_EQ(p.splits, 1);  // 80 tiles fill more than half of 132 SMs
  EXPECT_EQ(p.grid, 80);
  EXPECT_EQ(gemm_plan_name(p).rfind("64x64x64 tile, 14 stages", 0), 0u) << gemm_plan_name(p);
  EXPECT_EQ(gemm_plan(s, 132).bm, kBm);  // the default stays 128 rows
}

TEST(GemmPlan, TileOrderVisitsEveryTileOnce) {
  for (int tiles_m : {1, 3, 8, 13, 32})
    for (int tiles_n : {1, 5, 16})
      for (int batch : {1, 3}) {
        std::set<std::int64_t> seen;
        const std::int64_t total = std::int64_t(tiles_m) * tiles_n * batch;
        for (std::int64_t t = 0; t < total; ++t) {
          const TileCoord c = gemm_tile(t, tiles_m, tiles_n);
          ASSERT_GE(c.tm, 0);
          ASSERT_LT(c.tm, tiles_m);
          ASSERT_GE(c.tn, 0);
          ASSERT_LT(c.tn, tiles_n);
          ASSERT_LT(c.batch, batch);
          seen.insert((std::int64_t(c.batch) * tiles_m + c.tm) * tiles_n + c.tn);
        }
        EXPECT_EQ(std::int64_t(seen.size()), total) << tiles_m << "x" << tiles_n << "x" << batch;
      }
  // Grouped: the first tiles go down the first column of 8 tile rows, then the next column.
  const TileCoord c9 = gemm_tile(9, 32, 16);
  EXPECT_EQ(c9.tm, 1);
  EXPECT_EQ(c9.tn, 1);
  const TileCoord last_group = gemm_tile(8 * 16 * 4 + 5, 35, 16);  // rows 32..34: 3 rows
  EXPECT_EQ(last_group.tm, 32 + 5 % 3);
  EXPECT_EQ(last_group.tn, 5 / 3);
}

TEST(GemmPlan, TileRuleAndGrid) {
  const GemmPlan big = gemm_plan({1, 4096, 4096, 4096}, 132);
  EXPECT_EQ(big.bn, 256);
  EXPECT_EQ(big.tiles, 32 * 16);
  EXPECT_EQ(big.grid, 132);
  EXPECT_EQ(big.k_blocks, 64);
  EXPECT_EQ(gemm_plan_name(big), "128x256x64 tile, 4 stages, 132 persistent blocks over 512 tiles");
  const GemmPlan skinny = gemm_plan({1, 8, 4096, 4096}, 132);  // 16 tiles of 256: too few
  EXPECT_EQ(skinny.bn, 128);
  EXPECT_EQ(skinny.tiles, 32);
  EXPECT_EQ(skinny.splits, 4);  // split-K: 132 / 32 tiles
  EXPECT_EQ(skinny.split_k_blocks, 16);
  EXPECT_EQ(skinny.units, 128);
  EXPECT_EQ(skinny.grid, 128);
  EXPECT_EQ(gemm_workspace_bytes({1, 8, 4096, 4096}, skinny), std::size_t(4) * 8 * 4096 * 4);
  EXPECT_EQ(gemm_counter_bytes(skinny), 0u);
  EXPECT_TRUE(gemm_can_sum_in_kernel(GemmSchedule::cooperative, 128));
  EXPECT_TRUE(gemm_can_sum_in_kernel(GemmSchedule::cooperative, 64));
  EXPECT_FALSE(gemm_can_sum_in_kernel(GemmSchedule::cooperative, 256));
  EXPECT_FALSE(gemm_can_sum_in_kernel(GemmSchedule::pingpong, 128));
  // Summed in the kernel: a 32-bit counter a tile after the partials, in whole 16 bytes.
  GemmPlan in_kernel = skinny;
  in_kernel.reduce_in_kernel = true;
  EXPECT_EQ(gemm_partial_bytes({1, 8, 4096, 4096}, in_kernel), std::size_t(4) * 8 * 4096 * 4);
  EXPECT_EQ(gemm_counter_bytes(in_kernel), std::size_t(32 * 4));
  EXPECT_EQ(gemm_workspace_bytes({1, 8, 4096, 4096}, in_kernel),
            std::size_t(4) * 8 * 4096 * 4 + 32 * 4);
  in_kernel.tiles = 33;
  EXPECT_EQ(gemm_counter_bytes(in_kernel), std::size_t(144));
  EXPECT_EQ(gemm_plan_name(skinny),
            "128x128x64 tile, 6 stages, 128 persistent blocks over 32 tiles x 4 k splits of 16 "
            "blocks (FP32 partials, reduced in split order)");
  in_kernel.tiles = 32;
  EXPECT_EQ(gemm_plan_name(in_kernel),
            "128x128x64 tile, 6 stages, 128 persistent blocks over 32 tiles x 4 k splits of 16 "
            "blocks (FP32 partials, summed in split order by each tile's last unit)");
  const GemmPlan batched = gemm_plan({8, 512, 512, 512}, 132);  // 8 x 4 x 2 = 64 tiles of 256
  EXPECT_EQ(batched.bn, 128);
  EXPECT_EQ(batched.tiles, 8 * 4 * 4);
  EXPECT_EQ(batched.splits, 1);  // its partials would move more bytes than its operands
  EXPECT_EQ(gemm_workspace_bytes({8, 512, 512, 512}, batched), 0u);
  const GemmPlan odd = gemm_plan({1, 3000, 5000, 1000}, 132);
  EXPECT_EQ(odd.bn, 256);
  EXPECT_EQ(odd.tiles_m, 24);
  EXPECT_EQ(odd.tiles_n, 20);
  EXPECT_EQ(odd.k_blocks, 16);  // 1000 = 15 blocks of 64 + 40, zero-filled
  EXPECT_EQ(odd.splits, 1);
  EXPECT_EQ(big.splits, 1);
  EXPECT_EQ(big.units, big.tiles);
  EXPECT_EQ(gemm_plan({1, 4096, 4096, 4096}, 132, 128).bn, 128);  // override
}

TEST(GemmPlan, SplitKRule) {
  // m <= 64 class: few tiles, long k, small output.
  EXPECT_EQ(gemm_plan({1, 64, 4096, 4096}, 132).splits, 4);
  EXPECT_EQ(gemm_plan({1, 16, 1024, 8192}, 132).splits, 16);      // 8 tiles: 16 splits of 8 blocks
  EXPECT_EQ(gemm_plan({1, 8, 4096, 128}, 132).splits, 1);         // 2 k blocks: too short to split
  EXPECT_EQ(gemm_plan({1, 8, 4096, 512}, 132).splits, 2);         // 8 k blocks: 2 of 4 at least
  EXPECT_EQ(gemm_plan({1, 8, 4096, 4096}, 64).splits, 2);         // fewer SMs, fewer splits
  EXPECT_EQ(gemm_plan({1, 1024, 1024, 2048}, 132).splits, 1);     // 64 tiles, a large output
  EXPECT_EQ(gemm_plan({1, 21, 1064, 8200}, 132).splits, 13);      // 9 tiles: 14 wanted, runs of 10
  EXPECT_EQ(gemm_plan({1, 8, 4096, 4096}, 132, 0, 1).splits, 1);  // forced off
  // Forced counts: 10 blocks in 4 runs of 3, 3, 3, 1; 9 blocks in 4 would leave one empty: 3.
  const GemmPlan forced = gemm_plan({1, 100, 264, 640}, 132, 128, 4);
  EXPECT_EQ(forced.k_blocks, 10);
  EXPECT_EQ(forced.split_k_blocks, 3);
  EXPECT_EQ(forced.splits, 4);
  const GemmPlan shrunk = gemm_plan({1, 100, 264, 576}, 132, 128, 4);  // 9 blocks: 3 runs of 3
  EXPECT_EQ(shrunk.split_k_blocks, 3);
  EXPECT_EQ(shrunk.splits, 3);
  EXPECT_EQ(gemm_plan({1, 100, 264, 64}, 132, 128, 4).splits, 1);  // one k block
  EXPECT_EQ(gemm_plan({1, 100, 264, 640}, 132, 128, 99).splits, 10);
  EXPECT_NE(gemm_plan_name(forced).find(" x 4 k splits of 3 blocks"), std::string::npos);
}

TEST(GemmPlan, PingPongTakesTheNarrowTile) {
  const GemmPlan p = gemm_plan({1, 4096, 4096, 4096}, 132, 256, 0, GemmSchedule::pingpong);
  EXPECT_EQ(p.schedule, GemmSchedule::pingpong);
  EXPECT_EQ(p.bn, 128);
  EXPECT_EQ(p.stages, 6);
  EXPECT_EQ(p.tiles, 32 * 32);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(gemm_plan_name(p),
            "128x128x64 tile, 6 stages, ping-pong warpgroups, 132 persistent blocks over 1024 "
            "tiles");
  EXPECT_EQ(gemm_plan({1, 8, 4096, 4096}, 132, 0, 0, GemmSchedule::pingpong).splits, 4);
}

// The epilogue's shuffles, run on four modelled lanes: each ends with its block's four pairs.
TEST(GemmLayout, QuadTransposeGathersEachBlock) {
  int v[4][4], out[4][4] = {};
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 4; ++i) v[q][i] = 10 * i + q;  // block i, pair q
  for (int r = 0; r < 4; ++r) {
    int sent[4];
    for (int q = 0; q < 4; ++q) sent[q] = v[q][quad_send_block(q, r)];
    for (int q = 0; q < 4; ++q) out[q][quad_source_lane(q, r)] = sent[quad_source_lane(q, r)];
  }
  for (int q = 0; q < 4; ++q)
    for (int p = 0; p < 4; ++p) EXPECT_EQ(out[q][p], 10 * q + p) << "lane " << q << " pair " << p;
}

TEST(GemmPlan, SplitRangesCoverEveryKBlockOnce) {
  for (int k_blocks : {1, 2, 7, 10, 16, 64, 65})
    for (int want : {1, 2, 3, 4, 7, 16}) {
      const GemmPlan p = gemm_plan({1, 8, 128, std::int64_t(k_blocks) * kBk}, 132, 128, want);
      ASSERT_EQ(p.k_blocks, k_blocks);
      ASSERT_LE(p.splits, want);
      ASSERT_EQ(p.units, p.tiles * p.splits);
      int next = 0;
      for (int sp = 0; sp < p.splits; ++sp) {
        const KRange r = gemm_split_range(sp, p.split_k_blocks, p.k_blocks);
        EXPECT_EQ(r.begin, next) << k_blocks << " in " << want;
        EXPECT_GT(r.end, r.begin) << "split " << sp << " of " << p.splits << " is empty";
        next = r.end;
      }
      EXPECT_EQ(next, k_blocks) << k_blocks << " in " << want;
    }
}

// Variant 4's automatic choice on issue 26's shapes, 132 SMs (the measured reasons:
// gemm_config.hpp).
TEST(GemmPlan, AutomaticChoice) {
  const GemmPlan llama = gemm_auto_plan({1, 4096, 11008, 4096}, 132);  // 2752 tiles: 20.8 waves
  EXPECT_EQ(llama.schedule, GemmSchedule::pingpong);
  EXPECT_EQ(llama.bn, 128);
  EXPECT_EQ(gemm_auto_plan({1, 8192, 8192, 8192}, 132).schedule, GemmSchedule::pingpong);
  const GemmPlan square = gemm_auto_plan({1, 4096, 4096, 4096}, 132);  // 1024 tiles: 7.75 waves
  EXPECT_EQ(square.schedule, GemmSchedule::cooperative);
  EXPECT_EQ(square.bn, 256);
  EXPECT_EQ(gemm_auto_plan({1, 3000, 5000, 1000}, 132).schedule, GemmSchedule::cooperative);
  const GemmPlan skinny = gemm_auto_plan({1, 8, 4096, 4096}, 132);  // 16 tiles of 256, 8 splits
  EXPECT_EQ(skinny.bn, 256);
  EXPECT_EQ(skinny.splits, 8);
  EXPECT_GT(skinny.splits, gemm_plan({1, 8, 4096, 4096}, 132).splits);
  const GemmPlan batched = gemm_auto_plan({8, 512, 512, 512}, 132);
  const GemmPlan rule = gemm_plan({8, 512, 512, 512}, 132);
  EXPECT_EQ(batched.bn, rule.bn);
  EXPECT_EQ(batched.splits, rule.splits);
}

TEST(GemmPlan, TakesSixteenBitRowsInWhole16ByteUnits) {
  EXPECT_EQ(gemm_unsupported_reason({1, 4096, 4096, 4096}, 2), "");
  EXPECT_EQ(gemm_unsupported_reason({3, 77, 136, 72}, 2), "");
  EXPECT_EQ(gemm_unsupported_reason({1, 1, 8, 8}, 2), "");
  EXPECT_NE(gemm_unsupported_reason({1, 64, 64, 64}, 4), "");   // tf32
  EXPECT_NE(gemm_unsupported_reason({1, 64, 64, 100}, 2), "");  // k % 8
  EXPECT_NE(gemm_unsupported_reason({1, 64, 130, 64}, 2), "");  // n % 8
  EXPECT_NE(gemm_unsupported_reason({1, 0, 64, 64}, 2), "");
  EXPECT_NE(gemm_unsupported_reason({1, std::int64_t(1) << 31, 64, 64}, 2), "");
  // A shared by the batch, B K-major: the same rows in whole 16-byte units (k and n).
  GemmShape one_a{32, 256, 3136, 64};
  one_a.a_shared = true;
  EXPECT_EQ(gemm_unsupported_reason(one_a, 2), "");
  GemmShape tn{1, 1001, 24, 16};
  tn.b_k_major = true;
  EXPECT_EQ(gemm_unsupported_reason(tn, 2), "");
  tn.k = 20;
  EXPECT_NE(gemm_unsupported_reason(tn, 2), "");
  // tf32: FP32 storage, B K-major only; the element size is the shape's.
  GemmShape t{1, 4096, 4096, 4096};
  t.element_bytes = 4;
  EXPECT_NE(gemm_unsupported_reason(t, 4), "");  // B MN-major
  t.b_k_major = true;
  EXPECT_EQ(gemm_unsupported_reason(t, 4), "");
  EXPECT_NE(gemm_unsupported_reason(t, 2), "");
  EXPECT_NE(gemm_unsupported_reason(GemmShape{1, 64, 64, 64}, 4), "");
}

// tf32 keeps the stage's bytes: 32 k values a block; the tiles are the 16-bit types'.
TEST(GemmPlan, Tf32BlocksOf32) {
  GemmShape t{1, 4096, 4096, 1000};
  t.b_k_major = true;
  t.element_bytes = 4;
  for (int bn : {128, 256}) {
    const GemmPlan p = gemm_plan(t, 132, bn);
    EXPECT_EQ(p.bk, 32);
    EXPECT_EQ(p.k_blocks, (1000 + 31) / 32);
    EXPECT_EQ(p.bn, bn);
    EXPECT_EQ(p.stages, gemm_stages(bn));
  }
  EXPECT_NE(gemm_plan_name(gemm_plan(t, 132)).find("128x256x32 tile"), std::string::npos);
  EXPECT_EQ(gemm_plan(GemmShape{1, 4096, 4096, 1000}, 132).bk, 64);
  // The same bytes per k step: 8 tf32 values are 16 16-bit ones.
  EXPECT_EQ(block_k(4) * 4, kBk * kElementBytes);
}

}  // namespace
}  // namespace bench::gemm
