// The shared-memory tiled GPU schedule of halide_cuda's "manual" (halide_cuda_schedule.cpp runs
// manual_basic where this one cannot apply): its design, tile presets, per-problem tile search
// and the times it measured.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "baselines/conv/halide_cuda_schedule.hpp"  // declares apply_halide_cuda_tiled
#include "core/error.hpp"

namespace conv {
namespace {

using Halide::RVar;
using Halide::TailStrategy;
using Halide::Var;

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
// Measured (H200, fp32, pure timing; speed = cuDNN's GPU median / this one's, geometric mean over
// ResNet-50's 6 and VGG-16's 9 layers; per-layer medians and the commands in
// results/h200/20261124_conv_halide_cuda_tiles/, source 35aaafa, before the 1x1 rule below):
//     preset          ResNet-50   VGG-16   all 15
//     auto (default)  0.420       0.564    0.502
//     c32             0.428       0.565    0.506
//     c64             0.292       0.366    0.335
//     c128            0.235       0.200    0.213
//     k16             0.408       0.555    0.491
//     w4              0.361       0.466    0.421
//     manual_basic    0.298       0.375    0.342
// auto chose 32 channels per block on every layer but res2_1x1_up (64: 531 us, c32 474 us,
// manual_basic 196 us); conv1 and conv1_1 (3 input channels) run the basic schedule in every
// preset. Since then 1x1 filters run the basic schedule (tiled_unsupported), which makes auto's
// estimate 0.537 over the 15 layers with manual_basic's res2_1x1_up time: an estimate until the
// next H200 run measures it. ncu on res3_3x3 (auto, 452 us against cuDNN's 122 us; ncu/ beside
// the timings): 128 registers per thread, 25% theoretical and 18% achieved occupancy, 1.2
// instructions per cycle, L1/shared-memory throughput 78%, DRAM 0.7%: bound by the shared-memory
// loads of a one-warp block that has few warps beside it to hide them.

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
// layers of ResNet-50 and VGG-16 at cuDNN's speed (0.96x and 1.01x, halide_cuda_schedule.cpp).
// 1x1 filters keep the basic schedule too: on ResNet-50's res2_1x1_up (mb32ic64ih56oc256kh1,
// H200, fp32) the tiled schedule took 474-724 us by preset against the basic one's 196 us
// (results/h200/20261124_conv_halide_cuda_tiles/).
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
  const std::int64_t row =
      halide_ceil_div(input_extent(t.cols(), p.sw, p.kw, p.dilation_w()), 4) * 4;
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
  if (p.kh * p.kw == 1)
    return "a 1x1 filter: a staged input value serves one tap, no more reuse than the basic "
           "schedule's registers give, and each chunk costs two barriers";
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
  const double covered = static_cast<double>(halide_ceil_div(ow, t.cols()) * t.cols()) *
                         static_cast<double>(halide_ceil_div(oh, t.rows()) * t.rows());
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
  const double warps =
      static_cast<double>(halide_ceil_div(ow, t.cols()) * halide_ceil_div(oh, t.rows()) *
                          halide_ceil_div(p.oc, t.channels()) * p.mb * t.warps());
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

}  // namespace

const std::vector<std::string>& halide_cuda_tiles() {
  static const std::vector<std::string> tiles = [] {
    std::vector<std::string> v;
    for (const TilePreset& t : kTilePresets) v.push_back(t.name);
    return v;
  }();
  return tiles;
}

std::string apply_halide_cuda_tiled(HalideConv& h, const std::string& tile, HalideLoops loops,
                                    std::string* why_not) {
  const Problem& p = h.problem;
  const TilePreset* preset = find_preset(tile);
  BENCH_CHECK(preset != nullptr, "unknown Halide CUDA tile preset " + tile);
  std::string why = tiled_unsupported(p);
  Tile t;
  if (why.empty() && !choose_tile(p, *preset, &t))
    why = "no tile of preset " + std::string(preset->name) + " fits 48 KiB of shared memory";
  if (!why.empty()) {
    if (why_not) *why_not = why;
    return "";
  }
  return schedule_tiled(h, t, loops,
                        "manual " + to_string(p.layout) + " tiled (preset " + preset->name + ")");
}

}  // namespace conv
