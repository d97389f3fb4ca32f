// The halide_cuda backend's schedules for the algorithm of halide_conv.hpp, one block per
// schedule as Halide's apps/conv_layer keeps them, each with the times it measured beside it:
//   manual        the shared-memory tiled schedule of halide_cuda_tiled.cpp (input and weight
//                 tiles staged per reduction chunk, register tiles per lane); falls back to
//                 manual_basic where it cannot apply, and says so in its description
//   manual_basic  register tiles per thread, no shared memory (the schedule before "manual")
//   li2018        Halide 14's GPU autoscheduler
// Nothing here touches a device: every schedule lowers and compiles to PTX without one
// (tests/conv/test_halide_cuda_schedule.cpp checks that on every machine;
// tests/conv/test_halide_cuda.cpp checks the results on a GPU).
#include "baselines/conv/halide_cuda_schedule.hpp"

#include <algorithm>
#include <cstdint>
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

using Halide::TailStrategy;
using Halide::Var;

// The factor f in [max(1, hi / 2), hi] whose tiles of f * unit cover extent with the least
// recomputation (ShiftInwards evaluates ceil(extent / (f * unit)) * f * unit elements); the
// largest of equals. E.g. 28 columns rather than 32 for an image 56 wide.
int least_waste(int hi, std::int64_t unit, std::int64_t extent) {
  int best = hi;
  std::int64_t best_covered = halide_ceil_div(extent, hi * unit) * hi * unit;
  for (int f = hi - 1; f >= std::max(1, hi / 2); --f) {
    const std::int64_t covered = halide_ceil_div(extent, f * unit) * f * unit;
    if (covered < best_covered) {
      best = f;
      best_covered = covered;
    }
  }
  return best;
}

// Output splits shift the last tile inwards (ShiftInwards), which keeps every tile the same
// constant size (so the accumulators can live in registers) and inside the output; every factor
// is therefore at most the extent it splits (halide_fit()).

// ---- Schedule: manual_basic (CUDA GPU) --------------------------------------------------------
// Output tiles to blocks and threads, each thread's register tile accumulated over the whole
// reduction straight from global memory (through L1); no shared memory.
// Measured (H200, fp32, nchw, pure timing, GPU median, source 35aaafa; manual_basic.json and
// cudnn.json in results/h200/20261124_conv_halide_cuda_tiles/), ms, with cuDNN's beside it and
// cuDNN / this:
//   ResNet-50 (mb32): conv1 0.385 (0.370, 0.96), res2_3x3 0.602 (0.253, 0.42), res2_1x1_up 0.196
//     (0.122, 0.62), res3_3x3 1.016 (0.122, 0.12), res4_3x3 1.658 (0.248, 0.15), res5_3x3 2.147
//     (0.329, 0.15)
//   VGG-16 (mb16): conv1_1 0.163 (0.164, 1.01), conv1_2 2.723 (1.414, 0.52), conv2_1 1.481
//     (0.708, 0.48), conv2_2 2.985 (1.385, 0.46), conv3_1 2.310 (0.694, 0.30), conv3_2 4.649
//     (1.569, 0.34), conv4_1 4.048 (0.967, 0.24), conv4_2 8.128 (2.167, 0.27), conv5_1 3.323
//     (0.652, 0.20)
//   geometric mean of cuDNN / this over the 15 layers: 0.342.

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
  const int tx = least_waste(halide_fit(32, p.ow()), 1, p.ow());
  int rc = halide_fit(8, p.oc), ry = halide_fit(4, p.oh());
  const auto threads = [&] {
    return halide_ceil_div(p.ow(), tx) * tx * halide_ceil_div(p.oh(), ry) *
           halide_ceil_div(p.oc, rc) * p.mb;
  };
  while (threads() < kMinThreads && (rc > 1 || ry > 1)) {
    if (rc >= ry)
      rc = (rc + 1) / 2;
    else
      ry = (ry + 1) / 2;
  }
  const int ty = least_waste(halide_fit(kThreadsPerBlock / tx, p.oh() / ry), ry, p.oh());
  const int tc = halide_fit(kThreadsPerBlock / (tx * ty), p.oc / rc);
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
  int rx = halide_fit(16, p.ow());
  while (p.oc * halide_ceil_div(p.ow(), rx) * p.oh() * p.mb < kMinThreads && rx > 1)
    rx = (rx + 1) / 2;
  rx = least_waste(rx, 1, p.ow());
  const int tc = halide_fit(32, p.oc);
  const int tx = least_waste(halide_fit(kThreadsPerBlock / tc, p.ow() / rx), rx, p.ow());
  const int ty = least_waste(halide_fit(kThreadsPerBlock / (tc * tx), p.oh()), 1, p.oh());
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

// ---- Schedule: manual (CUDA GPU) -------------------------------------------------------------
// The shared-memory tiled schedule of halide_cuda_tiled.cpp (its design and measured times are
// there), or manual_basic where that cannot apply, saying why.

std::string schedule_manual(HalideConv& h, const std::string& tile, HalideLoops loops) {
  std::string why_not;
  const std::string tiled = apply_halide_cuda_tiled(h, tile, loops, &why_not);
  if (!tiled.empty()) return tiled;
  return schedule_basic(h, loops, "manual", ", basic schedule (not tiled: " + why_not + ")");
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

std::string halide_cuda_schedule_unsupported(const std::string& schedule, const std::string& tile) {
  if (schedule == "adams2019")
    return "Halide 14's Adams2019 schedules CPUs only (its GPU successor, Anderson2021, came with "
           "Halide 15)";
  if (schedule == "mullapudi2016") return "Halide 14's Mullapudi2016 schedules CPUs only";
  const std::vector<std::string>& all = halide_cuda_schedules();
  if (std::find(all.begin(), all.end(), schedule) == all.end())
    return "unknown Halide schedule '" + schedule + "' (manual manual_basic li2018 on the GPU)";
  const std::vector<std::string>& tiles = halide_cuda_tiles();
  if (!tile.empty() && std::find(tiles.begin(), tiles.end(), tile) == tiles.end()) {
    std::string names;
    for (const std::string& t : tiles) names += (names.empty() ? "" : " ") + t;
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
