// The halide_cuda backend's schedules for the algorithm of halide_conv.hpp, one block per
// schedule as Halide's apps/conv_layer keeps them, each with the times it measured beside it:
//   manual        shared-memory tiled schedule (input and weight tiles staged per reduction
//                 chunk, register tiles per lane); falls back to manual_basic where it cannot
//                 apply, and says so in its description
//   manual_basic  register tiles per thread, no shared memory (the schedule before "manual")
//   li2018        Halide 14's GPU autoscheduler
// Nothing here touches a device: every schedule lowers and compiles to PTX without one
// (tests/test_halide_cuda_schedule.cpp checks that on every machine; tests/test_halide_cuda.cpp
// checks the results on a GPU).
#include "baselines/conv/halide_cuda_schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"

#ifndef MYCONV_HALIDE_PLUGIN_DIR
#define MYCONV_HALIDE_PLUGIN_DIR ""
#endif

namespace conv {
namespace {

using Halide::RVar;
using Halide::TailStrategy;
using Halide::Var;

int fit(int want, std::int64_t extent) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(want, extent)));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// The factor f in [max(1, hi / 2), hi] whose tiles of f * unit cover extent with the least
// recomputation (ShiftInwards evaluates ceil(extent / (f * unit)) * f * unit elements); the
// largest of equals. E.g. 28 columns rather than 32 for an image 56 wide.
int least_waste(int hi, std::int64_t unit, std::int64_t extent) {
  int best = hi;
  std::int64_t best_covered = ceil_div(extent, hi * unit) * hi * unit;
  for (int f = hi - 1; f >= std::max(1, hi / 2); --f) {
    const std::int64_t covered = ceil_div(extent, f * unit) * f * unit;
    if (covered < best_covered) {
      best = f;
      best_covered = covered;
    }
  }
  return best;
}

// Output splits shift the last tile inwards (ShiftInwards), which keeps every tile the same
// constant size (so the accumulators can live in registers) and inside the output; every factor
// is therefore at most the extent it splits (fit()).

// ---- Schedule: manual_basic (CUDA GPU) --------------------------------------------------------
// Output tiles to blocks and threads, each thread's register tile accumulated over the whole
// reduction straight from global memory (through L1); no shared memory.
// Measured (H200, fp32, nchw, real timing, GPU median; results/h200/20261123_session3/preset_all,
// when this schedule was "manual"), ms, with cuDNN's beside it and cuDNN / this:
//   ResNet-50 (mb32): conv1 0.392 (0.378, 0.96), res2_3x3 0.608 (0.261, 0.43), res2_1x1_up 0.202
//     (0.130, 0.65), res3_3x3 1.025 (0.134, 0.13), res4_3x3 1.672 (0.268, 0.16), res5_3x3 2.154
//     (0.341, 0.16)
//   VGG-16 (mb16): conv1_1 0.168 (0.173, 1.03), conv1_2 2.728 (1.426, 0.52), conv2_1 1.482
//     (0.715, 0.48), conv2_2 2.988 (1.389, 0.46), conv3_1 2.316 (0.702, 0.30), conv3_2 4.649
//     (1.598, 0.34), conv4_1 4.048 (0.991, 0.24), conv4_2 8.145 (2.172, 0.27), conv5_1 3.323
//     (0.665, 0.20)
//   geometric mean of cuDNN / this over the 15 layers: 0.35.

constexpr int kThreadsPerBlock = 128;
// Fewest threads worth launching: about half of an H100/H200's resident threads. Register tiles
// shrink (fewer outputs per thread, more threads) until a problem launches this many.
constexpr std::int64_t kMinThreads = 64 * 1024;

// x-threads: threads tx columns x ty row groups x tc channel groups; each thread accumulates ry
// rows x rc output channels in registers, reading each input value once for rc channels and each
// weight (the same address across a warp's columns and rows: a broadcast) once for ry rows.
// Consecutive threads take consecutive output columns, so in nchw the loads of src and stores of
// dst coalesce. Channel groups fill the block where rows are short (7 x 7 images). Blocks:
// (channel tiles x images) in x, column tiles in y, row tiles in z.
std::string schedule_x_threads(HalideConv& h, HalideLoops loops, const std::string& label) {
  const Problem& p = h.problem;
  const int tx = least_waste(fit(32, p.ow()), 1, p.ow());
  int rc = fit(8, p.oc), ry = fit(4, p.oh());
  const auto threads = [&] {
    return ceil_div(p.ow(), tx) * tx * ceil_div(p.oh(), ry) * ceil_div(p.oc, rc) * p.mb;
  };
  while (threads() < kMinThreads && (rc > 1 || ry > 1)) {
    if (rc >= ry)
      rc = (rc + 1) / 2;
    else
      ry = (ry + 1) / 2;
  }
  const int ty = least_waste(fit(kThreadsPerBlock / tx, p.oh() / ry), ry, p.oh());
  const int tc = fit(kThreadsPerBlock / (tx * ty), p.oc / rc);
  Var xo("xo"), xi("xi"), yo("yo"), yb("yb"), yt("yt"), yr("yr"), co("co"), cb("cb"), ct("ct"),
      cr("cr"), t("t");
  h.output.split(h.x, xo, xi, tx, TailStrategy::ShiftInwards)
      .split(h.y, yo, yb, ty * ry, TailStrategy::ShiftInwards)
      .split(yb, yt, yr, ry, TailStrategy::ShiftInwards)
      .split(h.c, co, cb, tc * rc, TailStrategy::ShiftInwards)
      .split(cb, ct, cr, rc, TailStrategy::ShiftInwards)
      .reorder(cr, yr, xi, yt, ct, co, h.n, xo, yo)
      .fuse(co, h.n, t)
      .unroll(cr)
      .unroll(yr);
  if (loops == HalideLoops::gpu) h.output.gpu_threads(xi, yt, ct).gpu_blocks(t, xo, yo);
  h.acc.compute_at(h.output, xi);
  if (loops == HalideLoops::gpu) h.acc.store_in(Halide::MemoryType::Register);
  h.acc.reorder(h.c, h.y, h.x, h.n).unroll(h.c).unroll(h.y);
  const bool unroll_kw = p.kw <= 7;
  Halide::Stage update = h.acc.update();
  update.reorder(h.c, h.y, h.x, h.n, h.k.x, h.k.y, h.k.z).unroll(h.c).unroll(h.y);
  if (unroll_kw) update.unroll(h.k.x);
  return label + ": block " + std::to_string(tx) + "x" + std::to_string(ty) + "x" +
         std::to_string(tc) + " threads (columns x row groups x channel groups), " +
         std::to_string(ry) + " rows x " + std::to_string(rc) +
         " channels per thread in registers" + (unroll_kw ? ", kw unrolled" : "");
}

// c-threads (nhwc with at least 32 output channels): a warp's 32 lanes take 32 consecutive output
// channels, so stores of dst coalesce, and every lane reads the same input value (a broadcast).
// The weights (ohwi) of consecutive output channels lie kh*kw*ic/g elements apart, so each
// weight load of a warp touches 32 cache lines; what amortizes it is the register tile: a thread
// accumulates rx columns of one row for its channel, one weight load per rx FMAs (a second
// channel per thread would cost another such load for rx more FMAs: no better). Threads: 32
// channels x tx column groups x ty rows. Blocks: (row tiles x images) in x, channel tiles in y,
// column tiles in z. The reduction runs input channels innermost (contiguous in src and wei, so
// a lane's next weights are in the line it just loaded), then kw, kh.
std::string schedule_c_threads(HalideConv& h, HalideLoops loops, const std::string& label) {
  const Problem& p = h.problem;
  int rx = fit(16, p.ow());
  while (p.oc * ceil_div(p.ow(), rx) * p.oh() * p.mb < kMinThreads && rx > 1) rx = (rx + 1) / 2;
  rx = least_waste(rx, 1, p.ow());
  const int tc = fit(32, p.oc);
  const int tx = least_waste(fit(kThreadsPerBlock / tc, p.ow() / rx), rx, p.ow());
  const int ty = least_waste(fit(kThreadsPerBlock / (tc * tx), p.oh()), 1, p.oh());
  Var co("co"), ct("ct"), xo("xo"), xb("xb"), xt("xt"), xr("xr"), yo("yo"), yt("yt"), t("t");
  h.output.split(h.c, co, ct, tc, TailStrategy::ShiftInwards)
      .split(h.x, xo, xb, tx * rx, TailStrategy::ShiftInwards)
      .split(xb, xt, xr, rx, TailStrategy::ShiftInwards)
      .split(h.y, yo, yt, ty, TailStrategy::ShiftInwards)
      .reorder(xr, ct, xt, yt, yo, h.n, co, xo)
      .fuse(yo, h.n, t)
      .unroll(xr);
  if (loops == HalideLoops::gpu) h.output.gpu_threads(ct, xt, yt).gpu_blocks(t, co, xo);
  h.acc.compute_at(h.output, ct);
  if (loops == HalideLoops::gpu) h.acc.store_in(Halide::MemoryType::Register);
  h.acc.reorder(h.x, h.c, h.y, h.n).unroll(h.x);
  h.acc.update().reorder(h.x, h.c, h.y, h.n, h.k.z, h.k.x, h.k.y).unroll(h.x);
  return label + ": block " + std::to_string(tc) + "x" + std::to_string(tx) + "x" +
         std::to_string(ty) + " threads (channels x column groups x rows), " + std::to_string(rx) +
         " columns per thread in registers";
}

std::string schedule_basic(HalideConv& h, HalideLoops loops, const std::string& name,
                           const std::string& note = "") {
  const Problem& p = h.problem;
  const std::string label = name + " " + to_string(p.layout) + note;
  if (p.layout == Layout::nhwc && p.oc >= 32) return schedule_c_threads(h, loops, label);
  if (p.layout == Layout::nhwc)
    return schedule_x_threads(h, loops,
                              label + ", " + std::to_string(p.oc) + " output channels < 32");
  return schedule_x_threads(h, loops, label);
}

// ---- Schedule: manual, tiled in shared memory (CUDA GPU) --------------------------------------
// Implicit GEMM in Halide's terms, after the GPU schedule of Halide's apps/conv_layer (a warp's
// lanes over output channels, the block's accumulators striped across the lanes in registers,
// the input staged in shared memory per reduction chunk):
//
//   block     (32 rc output channels) x (ty rows x tx columns) of one image; wx x wy warps of 32
//             lanes (one warp in the default preset, see below).
//   lane      rc channels (c = lane + 32 j) x ry rows x rx columns: rc ry rx accumulators in
//             registers. acc is computed per block and store_in(Register), with gpu_lanes over
//             c: Halide's LowerWarpShuffles gives each lane its stripe. reorder_storage puts c
//             innermost, so every other index term is a multiple of 32, which that pass needs to
//             prove the stripe is the lane's own.
//   reduction input channels in chunks of kc (a divisor of IC/G, so no chunk reads past the
//             tensor). Per chunk the block's threads copy into shared memory, cooperatively and
//             coalesced along the layout's contiguous dimension: the input tile (kc channels x
//             the rows and columns the output tile reads; zero padding applied and 16-bit values
//             widened to fp32 here, once per element) and the weight tile (32 rc channels x kc x
//             kh x kw, output channel innermost). Halide puts a barrier after the copy and after
//             the compute. Each lane then runs kc x kh x kw steps of its register tile out of
//             shared memory: the input value is the same address across the warp (a broadcast),
//             the weights are consecutive across the lanes (no bank conflicts), and with kw (and
//             kh, up to 5 x 5) unrolled each input value is loaded once per chunk step for every
//             tap that uses it.
//   tiles     every output split shifts its last tile inwards (ShiftInwards: constant sizes,
//             recomputing an overlap instead). Per problem the tile is searched within the
//             preset's bounds, by an estimate (tile_cost): recomputed outputs, times the
//             memory-instruction bound of a lane (its shared loads and its share of the copy;
//             about 4 FMAs issue per memory instruction at best), over the fraction of 8 warps
//             per SM of an H100/H200 that the launch gives and the block's registers and shared
//             memory let reside; ties go to more accumulators per lane, then to fewer words
//             copied per FMA. The estimate is not validated on a GPU: the fixed presets (c32,
//             c64, c128) let one run compare.
//
// Warps per block. The block's barrier needs a gpu_threads loop: with gpu_lanes alone Halide 14
// inserts none around the shared tiles, so even a one-warp block has a gpu_threads loop (of
// extent 1). With several warps (preset w4) the warps share the staged tiles, but each lane's
// accumulator array then holds the whole block's tile, indexed by the warp (Halide 14 stripes a
// block-level register array across lanes only, not warps): LLVM keeps the values in registers
// but leaves dead stores of them to local memory per chunk, more or fewer by tile shape (seen in
// the PTX). One warp per block has constant indices and no local memory, so it is the default.
// At most 48 KiB of shared memory per block (what a kernel gets without opting in; Halide 14's
// CUDA runtime does not opt in).
//
// Measured (H200, fp32; cuDNN / this, geometric mean over ResNet-50 and VGG-16, commands in
// baselines/conv/halide_cuda.cpp's header):
//   MEASURE-ME: placeholder, not yet measured (written on a machine without a GPU). The lead
//   fills in, per tile preset, the geomean and the per-layer GPU medians from the H200 run:
//     auto (default)  ResNet-50: ____  VGG-16: ____  geomean cuDNN / this: ____
//     c32             ResNet-50: ____  VGG-16: ____  geomean cuDNN / this: ____
//     c64             ResNet-50: ____  VGG-16: ____  geomean cuDNN / this: ____
//     c128            ResNet-50: ____  VGG-16: ____  geomean cuDNN / this: ____
//     k16             ResNet-50: ____  VGG-16: ____  geomean cuDNN / this: ____
//     w4              ResNet-50: ____  VGG-16: ____  geomean cuDNN / this: ____

// Bounds of the per-problem tile search (--halide-tile NAME).
struct TilePreset {
  const char* name;
  int min_rc, max_rc;    // channels per lane, as powers of two: the block has 32 rc channels
  int max_warps;         // warps per block
  int max_accumulators;  // rc * ry * rx per lane
  int max_columns;       // rx
  int max_chunk;         // kc: input channels per staged chunk
};

constexpr TilePreset kTilePresets[] = {
    // Default: one warp, 32 to 128 channels by the estimate, up to 64 accumulators per lane.
    {"auto", 1, 4, 1, 64, 8, 8},
    // The same with the channel tile fixed (smaller only where a group has fewer channels).
    {"c32", 1, 1, 1, 64, 8, 8},
    {"c64", 2, 2, 1, 64, 8, 8},
    {"c128", 4, 4, 1, 64, 8, 8},
    // auto with chunks of 16 input channels: half the barriers, twice the shared memory.
    {"k16", 1, 4, 1, 64, 8, 16},
    // auto with up to 4 warps sharing the staged tiles (see "Warps per block": dead local stores).
    {"w4", 1, 4, 4, 32, 8, 8},
};

const TilePreset* find_preset(const std::string& name) {
  if (name.empty()) return &kTilePresets[0];
  for (const TilePreset& t : kTilePresets)
    if (name == t.name) return &t;
  return nullptr;
}

constexpr std::int64_t kMaxSharedBytes = 48 * 1024;
// The GPU the tile search estimates for: an H100/H200 SM (132 of them) holds up to 32 blocks,
// 64 K registers and 228 KiB of shared memory (1 KiB of it reserved per block); every thread
// gets the register budget halide_cuda_runtime.hpp sets (128). 8 resident warps per SM are
// taken as enough to hide the copies' latency behind the other warps' FMAs.
constexpr double kSms = 132, kWarpsToHide = 8;
constexpr std::int64_t kSmBlocks = 32, kSmRegisters = 64 * 1024, kSmShared = 228 * 1024,
                       kBlockReservedShared = 1024, kRegistersPerThread = 128;
// Input channels per group below which manual keeps the basic schedule: a chunk would hold too
// little reduction to pay for its two barriers, and the basic schedule ran the 3-channel first
// layers of ResNet-50 and VGG-16 at cuDNN's speed (0.96x and 1.03x, above).
constexpr std::int64_t kMinTiledInputChannels = 8;

struct Tile {
  int rc = 1, rx = 1, ry = 1, wx = 1, wy = 1, kc = 1;
  int channels() const { return 32 * rc; }
  int cols() const { return wx * rx; }
  int rows() const { return wy * ry; }
  int warps() const { return wx * wy; }
  int accumulators() const { return rc * rx * ry; }
};

// Input elements along one dimension that `out` consecutive outputs read.
std::int64_t input_extent(std::int64_t out, std::int64_t stride, std::int64_t k,
                          std::int64_t dilation) {
  return (out - 1) * stride + (k - 1) * dilation + 1;
}

std::int64_t staged_input(const Problem& p, const Tile& t) {
  return input_extent(t.cols(), p.sw, p.kw, p.dilation_w()) *
         input_extent(t.rows(), p.sh, p.kh, p.dilation_h());
}

// The input tile's rows are stored padded to a multiple of 4 words (align_storage below).
std::int64_t shared_bytes(const Problem& p, const Tile& t) {
  const std::int64_t row = ceil_div(input_extent(t.cols(), p.sw, p.kw, p.dilation_w()), 4) * 4;
  const std::int64_t input = row * input_extent(t.rows(), p.sh, p.kh, p.dilation_h());
  return 4 * t.kc * (input + p.kh * p.kw * t.channels());
}

// Why the tiled schedule cannot run p at all (manual then runs the basic one), or empty.
std::string tiled_unsupported(const Problem& p) {
  const std::int64_t icg = p.ic / p.g, ocg = p.oc / p.g;
  if (ocg < 32)
    return std::to_string(ocg) + " output channels per group, fewer than a warp's 32 lanes";
  if (p.g > 1 && ocg % 32 != 0)
    return std::to_string(ocg) +
           " output channels per group, not a multiple of 32 (a block's channels must lie in one "
           "group)";
  if (icg < kMinTiledInputChannels)
    return std::to_string(icg) + " input channels per group, fewer than " +
           std::to_string(kMinTiledInputChannels);
  return "";
}

// The largest divisor of n that is at most hi.
int largest_divisor(std::int64_t n, int hi) {
  for (int d = static_cast<int>(std::min<std::int64_t>(hi, n)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// Words copied into shared memory per FMA (per input channel: the staged input and weights,
// over the block's FMAs).
double copied_per_fma(const Problem& p, const Tile& t) {
  return static_cast<double>(staged_input(p, t) + p.kh * p.kw * t.channels()) /
         static_cast<double>(t.channels() * t.cols() * t.rows() * p.kh * p.kw);
}

// The estimate the tile search minimizes (see the block comment above): time relative to an
// ideal tile, >= 1.
double tile_cost(const Problem& p, const Tile& t) {
  const std::int64_t oh = p.oh(), ow = p.ow();
  const double covered = static_cast<double>(ceil_div(ow, t.cols()) * t.cols()) *
                         static_cast<double>(ceil_div(oh, t.rows()) * t.rows());
  const double waste = covered / static_cast<double>(oh * ow);
  // Per lane and input channel: FMAs, and memory instructions (a quarter of the FMA rate): the
  // shared loads of the input rows and columns its ry x rx outputs read, once for all taps (4
  // words per load along rows at stride 1, whose staged rows start 16-byte aligned), rc weights
  // per tap, and the lane's share of the copy (a global load and a shared store per word).
  const double fmas = static_cast<double>(t.accumulators() * p.kh * p.kw);
  const std::int64_t row = input_extent(t.rx, p.sw, p.kw, p.dilation_w());
  const double copies =
      static_cast<double>(staged_input(p, t) + p.kh * p.kw * t.channels()) / (32.0 * t.warps());
  // A run of n words from an aligned start: n / 4 four-word loads, then the rest in two- and
  // one-word loads.
  const std::int64_t row_loads = p.sw == 1 ? row / 4 + (row % 4 + 1) / 2 : row;
  const double loads =
      static_cast<double>(input_extent(t.ry, p.sh, p.kh, p.dilation_h()) * row_loads +
                          t.rc * p.kh * p.kw) +
      2 * copies;
  const double load_bound = std::max(1.0, 4.0 * loads / fmas);
  // Warps per SM: what the launch gives each SM, at most what fits on one.
  const double warps = static_cast<double>(ceil_div(ow, t.cols()) * ceil_div(oh, t.rows()) *
                                           ceil_div(p.oc, t.channels()) * p.mb * t.warps());
  const std::int64_t blocks =
      std::min({kSmBlocks, kSmShared / (shared_bytes(p, t) + kBlockReservedShared),
                kSmRegisters / (kRegistersPerThread * 32 * t.warps())});
  const double per_sm = std::min(warps / kSms, static_cast<double>(blocks * t.warps()));
  const double filled = std::min(1.0, per_sm / kWarpsToHide);
  return waste * load_bound / filled;
}

// The tile for p within the preset's bounds; false when none fits in shared memory.
bool choose_tile(const Problem& p, const TilePreset& preset, Tile* chosen) {
  const std::int64_t icg = p.ic / p.g, ocg = p.oc / p.g, oh = p.oh(), ow = p.ow();
  bool found = false;
  Tile best;
  double best_cost = 0;
  // A fixed channel tile shrinks where a group has fewer channels.
  int min_rc = preset.min_rc;
  while (min_rc > 1 && (32 * min_rc > ocg || (p.g > 1 && ocg % (32 * min_rc) != 0))) min_rc /= 2;
  for (int rc = preset.max_rc; rc >= min_rc; rc /= 2) {
    if (32 * rc > ocg || (p.g > 1 && ocg % (32 * rc) != 0)) continue;
    for (int rx = 1; rx <= std::min<std::int64_t>(preset.max_columns, ow); ++rx)
      for (int ry = 1; ry <= oh && rc * rx * ry <= preset.max_accumulators; ++ry)
        for (int wx = 1; wx <= preset.max_warps && wx * rx <= ow; ++wx)
          for (int wy = 1; wx * wy <= preset.max_warps && wy * ry <= oh; ++wy) {
            Tile t{rc, rx, ry, wx, wy, 1};
            t.kc = largest_divisor(icg, preset.max_chunk);
            while (t.kc > 1 && shared_bytes(p, t) > kMaxSharedBytes)
              t.kc = largest_divisor(icg, t.kc - 1);
            if (shared_bytes(p, t) > kMaxSharedBytes) continue;
            const double cost = tile_cost(p, t);
            bool better = !found || cost < best_cost * (1 - 1e-9);
            if (found && !better && cost <= best_cost * (1 + 1e-9)) {
              if (t.accumulators() != best.accumulators())
                better = t.accumulators() > best.accumulators();
              else if (copied_per_fma(p, t) != copied_per_fma(p, best))
                better = copied_per_fma(p, t) < copied_per_fma(p, best);
              else
                better = t.rx > best.rx;
            }
            if (better) {
              found = true;
              best = t;
              best_cost = cost;
            }
          }
  }
  if (found) *chosen = best;
  return found;
}

std::string schedule_tiled(HalideConv& h, const Tile& t, HalideLoops loops,
                           const std::string& label) {
  const Problem& p = h.problem;
  const bool gpu = loops == HalideLoops::gpu;
  Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), co("co"), ci("ci"), wx("wx"), xr("xr"), wy("wy"),
      yr("yr"), cj("cj"), cl("cl"), w("w"), tile("tile");

  // Output: blocks over (column x row tiles, channel tiles, images); in a block, warps w over
  // (wx, wy), lanes cl over 32 channels, each lane's rc x ry x rx unrolled.
  h.output.split(h.x, xo, xi, t.cols(), TailStrategy::ShiftInwards)
      .split(h.y, yo, yi, t.rows(), TailStrategy::ShiftInwards)
      .split(h.c, co, ci, t.channels(), TailStrategy::ShiftInwards)
      .split(xi, wx, xr, t.rx)
      .split(yi, wy, yr, t.ry)
      .split(ci, cj, cl, 32)
      .reorder(cl, cj, xr, yr, wx, wy, xo, yo, co, h.n)
      .fuse(wx, wy, w)
      .fuse(xo, yo, tile);
  // The register tile is unrolled on the GPU only: the tiling it runs is the same without, and
  // LLVM's x86 back end takes minutes over the unrolled tiles of the host check.
  const auto unroll = [gpu](Halide::Stage s, std::initializer_list<Halide::VarOrRVar> vars) {
    if (gpu)
      for (const Halide::VarOrRVar& v : vars) s.unroll(v);
  };
  unroll(h.output, {cj, xr, yr});
  if (gpu) h.output.gpu_lanes(cl).gpu_threads(w).gpu_blocks(tile, co, h.n);

  // Accumulators: the block's tile, each lane's part in its registers, the same thread mapping.
  h.acc.compute_at(h.output, tile).reorder_storage(h.c, h.x, h.y, h.n);
  if (gpu) h.acc.store_in(Halide::MemoryType::Register);
  Halide::Stage init = h.acc;
  init.split(h.x, wx, xr, t.rx)
      .split(h.y, wy, yr, t.ry)
      .split(h.c, cj, cl, 32)
      .reorder(cl, cj, xr, yr, wx, wy, h.n)
      .fuse(wx, wy, w);
  unroll(init, {cj, xr, yr});
  if (gpu) init.gpu_lanes(cl).gpu_threads(w);

  // The reduction: chunks kzo outermost (the staging loop level), then the threads, then per
  // lane kzi x kh x kw steps of the unrolled register tile.
  RVar kzo("kzo"), kzi("kzi");
  Halide::Stage update = h.acc.update();
  update.split(h.x, wx, xr, t.rx)
      .split(h.y, wy, yr, t.ry)
      .split(h.c, cj, cl, 32)
      .split(h.k.z, kzo, kzi, t.kc)
      .reorder({cl, cj, xr, yr, h.k.x, h.k.y, kzi, wx, wy, kzo, h.n})
      .fuse(wx, wy, w);
  unroll(update, {cj, xr, yr, h.k.x});
  const bool unroll_kh = p.kh * p.kw <= 25;
  if (unroll_kh) unroll(update, {h.k.y});
  if (gpu) update.gpu_lanes(cl).gpu_threads(w);

  // Staging per chunk, in shared memory (a Func computed at the block level of a GPU kernel).
  // Each copy puts 32 lanes along a run that is contiguous in global memory and unrolls the
  // dimensions across it, so that a lane's index arithmetic is done once per run position and
  // the unrolled loads and stores use constant offsets. The outermost serial loop is split over
  // the block's warps, into a gpu_threads loop that encloses the unrolled ones and the lanes (also
  // of extent 1: unrolled loops around sibling gpu_lanes loops would get a barrier each).
  const auto warp_loop = [&](Halide::Func f, Var outer, Var warp) {
    f.split(outer, outer, warp, t.warps(), TailStrategy::GuardWithIf);
    if (gpu) f.gpu_threads(warp);
  };
  Halide::Func input = h.src_padded.in(h.acc), weights = h.weight.in(h.acc);
  {
    // Input (x, y, c, n): nchw: lanes along the rows (x, y fused), channels unrolled; nhwc: lanes
    // along (c, x) fused, rows unrolled. Rows are stored padded to 4 words, so that each starts
    // 16-byte aligned and a lane's run along a row loads 4 words at a time (ld.shared.v4).
    const std::vector<Var> a = input.args();
    Var f("f"), fo("fo"), fl("fl"), fw("fw");
    const Var unrolled = p.layout == Layout::nhwc ? a[1] : a[2];
    input.compute_at(h.acc, kzo).align_storage(a[0], 4);
    if (p.layout == Layout::nhwc)
      input.fuse(a[2], a[0], f);
    else
      input.fuse(a[0], a[1], f);
    input.split(f, fo, fl, 32, TailStrategy::GuardWithIf);
    warp_loop(input, fo, fw);
    input.reorder(fl, unrolled, fw, fo, a[3]);
    unroll(input, {unrolled});
    if (gpu) input.gpu_lanes(fl);
  }
  {
    // Weights (s, r, icg, c): stored c innermost (lanes read consecutive words), copied with the
    // lanes along c too (no bank conflicts), each lane walking its own channels' runs, contiguous
    // in memory: s, r, icg in oihw (kw and kh unrolled), icg, s, r in ohwi (icg unrolled).
    const std::vector<Var> a = weights.args();
    Var cj("cj"), cl("cl"), sr("sr"), ww("ww");
    weights.compute_at(h.acc, kzo).reorder_storage(a[3], a[0], a[1], a[2]).split(a[3], cj, cl, 32);
    if (p.layout == Layout::nhwc) {
      weights.fuse(a[0], a[1], sr);
      warp_loop(weights, sr, ww);
      weights.reorder(cl, a[2], cj, ww, sr);
      unroll(weights, {a[2], cj});
    } else {
      warp_loop(weights, a[2], ww);
      weights.reorder(cl, a[0], a[1], cj, ww, a[2]);
      unroll(weights, {a[0], cj});
      if (unroll_kh) unroll(weights, {a[1]});
    }
    if (gpu) weights.gpu_lanes(cl);
  }

  const auto n = [](std::int64_t v) { return std::to_string(v); };
  return label + ": block " + n(t.channels()) + " channels x " + n(t.rows()) + "x" + n(t.cols()) +
         " pixels (" +
         (t.warps() == 1
              ? std::string("1 warp")
              : n(t.warps()) + " warps: " + n(t.wy) + " x " + n(t.wx) + " over rows x columns") +
         "), each lane " + n(t.rc) + (t.rc == 1 ? " channel x " : " channels x ") + n(t.ry) + "x" +
         n(t.rx) + " pixels in registers; input channels in chunks of " + n(t.kc) +
         " staged in shared memory (input " + n(t.kc) + "x" +
         n(input_extent(t.rows(), p.sh, p.kh, p.dilation_h())) + "x" +
         n(input_extent(t.cols(), p.sw, p.kw, p.dilation_w())) + ", weights " + n(t.channels()) +
         "x" + n(t.kc) + "x" + n(p.kh) + "x" + n(p.kw) + ": " + n(shared_bytes(p, t)) +
         " bytes per block), kw" + (unroll_kh ? " and kh" : "") + " unrolled";
}

std::string schedule_manual(HalideConv& h, const std::string& tile, HalideLoops loops) {
  const Problem& p = h.problem;
  const TilePreset* preset = find_preset(tile);
  BENCH_CHECK(preset != nullptr, "unknown Halide CUDA tile preset " + tile);
  std::string why = tiled_unsupported(p);
  Tile t;
  if (why.empty() && !choose_tile(p, *preset, &t))
    why = "no tile of preset " + std::string(preset->name) + " fits 48 KiB of shared memory";
  if (!why.empty())
    return schedule_basic(h, loops, "manual", ", basic schedule (not tiled: " + why + ")");
  return schedule_tiled(h, t, loops,
                        "manual " + to_string(p.layout) + " tiled (preset " + preset->name + ")");
}

// ---- Autoscheduler: Li2018 ------------------------------------------------------------------
// Li2018 is the only one of Halide 14's autoschedulers with a GPU mode: it tiles outputs to
// blocks of 64 threads and computes most Funcs at root (one kernel each, their buffers allocated
// per call, which Halide's device allocation cache then reuses; see
// JITSharedRuntime::reuse_device_allocations in halide_cuda.cpp). Adams2019 and Mullapudi2016
// schedule CPUs only in Halide 14 (Adams2019's GPU successor, Anderson2021, came with Halide 15).

std::string plugin_path(const std::string& dir) {
  return (dir.empty() ? std::string(MYCONV_HALIDE_PLUGIN_DIR) : dir) + "/libautoschedule_li2018.so";
}

// Loads the plugin once per process (it registers Li2018 when loaded; loading a library that is
// already loaded, e.g. by halide_cpu, does not register it again).
void load_li2018(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(path)) return;
  Halide::load_plugin(path);
  loaded.insert(path);
}

// Li2018's GPU mode reads none of the machine parameters (blocks are 64 threads of the first
// dimension with 64 or more elements; a reduction is also spread over blocks, with atomics, when
// the output has fewer than 4096 elements), so Halide's generic ones are passed.
Halide::MachineParams li2018_params() {
  return Halide::MachineParams::generic();
}

std::string schedule_li2018(HalideConv& h, const std::string& plugin, const Halide::Target& t) {
  try {
    load_li2018(plugin);
    Halide::Pipeline(h.output).auto_schedule("Li2018", t, li2018_params());
  } catch (const Halide::Error& e) {
    throw bench::Unsupported(std::string("Halide autoscheduler Li2018 (GPU): ") + e.what());
  }
  return "auto:Li2018";
}

}  // namespace

// ---- Choices --------------------------------------------------------------------------------

const std::vector<std::string>& halide_cuda_schedules() {
  static const std::vector<std::string> schedules{"manual", "manual_basic", "li2018"};
  return schedules;
}

const std::vector<std::string>& halide_cuda_tiles() {
  static const std::vector<std::string> tiles = [] {
    std::vector<std::string> v;
    for (const TilePreset& t : kTilePresets) v.push_back(t.name);
    return v;
  }();
  return tiles;
}

std::string halide_cuda_schedule_unsupported(const std::string& schedule, const std::string& tile) {
  if (schedule == "adams2019")
    return "Halide 14's Adams2019 schedules CPUs only (its GPU successor, Anderson2021, came with "
           "Halide 15)";
  if (schedule == "mullapudi2016") return "Halide 14's Mullapudi2016 schedules CPUs only";
  const std::vector<std::string>& all = halide_cuda_schedules();
  if (std::find(all.begin(), all.end(), schedule) == all.end())
    return "unknown Halide schedule '" + schedule + "' (manual manual_basic li2018 on the GPU)";
  if (!find_preset(tile)) {
    std::string names;
    for (const std::string& t : halide_cuda_tiles()) names += (names.empty() ? "" : " ") + t;
    return "unknown Halide CUDA tile preset '" + tile + "' (" + names + ")";
  }
  if (!tile.empty() && schedule != "manual")
    return "the tile preset (--halide-tile " + tile + ") is one of the manual schedule's; " +
           schedule + " has none";
  return "";
}

HalideConvOptions halide_cuda_conv_options(const std::string& schedule) {
  HalideConvOptions o;
  o.clamp_reads = schedule == "li2018";  // see HalideConvOptions
  o.bf16_as_bits = kHalideCudaBf16AsBits;
  return o;
}

std::string halide_cuda_li2018_plugin(const std::string& dir) {
  return plugin_path(dir);
}

Halide::MachineParams halide_cuda_li2018_params() {
  return li2018_params();
}

std::string apply_halide_cuda_schedule(HalideConv& h, const std::string& schedule,
                                       const std::string& tile, const std::string& plugin_dir,
                                       const Halide::Target& t, HalideLoops loops) {
  if (const std::string why = halide_cuda_schedule_unsupported(schedule, tile); !why.empty())
    throw bench::Unsupported(why);
  if (schedule == "manual") return schedule_manual(h, tile, loops);
  if (schedule == "manual_basic") return schedule_basic(h, loops, "manual_basic");
  BENCH_CHECK(loops == HalideLoops::gpu, "Li2018 schedules only for the GPU");
  return schedule_li2018(h, plugin_path(plugin_dir), t);
}

}  // namespace conv
