// The depthwise strip kernels (sub-variants 8.2 and 8.3) emulated thread by thread on the CPU, in
// test_depthwise_config's binary: the kernels' own per-thread algorithm (depthwise_strip_band)
// with host loads and stores that check each access (aligned to its vector, inside the tensor, a
// core vector inside its row, each input row of the band loaded once; 8.3: each tile vector
// copied by exactly one thread, the window's columns in the tile), every output written exactly
// once and bit-identical to the taps summed in (r, s) order with fmaf (what every depthwise
// kernel computes), within the float64 reference's tolerance; on fixed, MobileNet-v2 and
// randomized 3x3 problems, both layouts, fp32 and bf16, automatic and forced configurations.
// Support, choice and configurations: test_depthwise_strip.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_strip.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "tests/conv/depthwise_strip_cases.hpp"

namespace conv {
namespace {

using namespace conv::testing;

// ---- CPU emulation of every thread --------------------------------------------------------------

struct Emulation {
  const Im2colGeometry& g;
  const DepthwiseStripConfig& s;
  const HostData& data;
  DataType dt;
  std::vector<float> out;   // problem layout, rounded to dt
  std::vector<int> writes;  // per output element
  std::string error;        // the first access error, "" when none

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
  // A load of n elements at element offset `at` of the input tensor.
  void check_load(std::int64_t at, int n, const char* what) {
    if (at % n != 0) fail(std::string(what) + " load misaligned");
    if (at < 0 || at + n > std::int64_t(data.src.size()))
      fail(std::string(what) + " load outside the input");
  }
  void write(std::int64_t at, int n, const float* v, const char* what) {
    if (at % n != 0) fail(std::string(what) + " store misaligned");
    if (at < 0 || at + n > std::int64_t(out.size())) {
      fail(std::string(what) + " store outside the output");
      return;
    }
    for (int i = 0; i < n; ++i) {
      out[std::size_t(at + i)] = bench::round_to(dt, v[i]);
      ++writes[std::size_t(at + i)];
    }
  }
};

// The kernels' rows for one nchw thread: the loads of NchwRows::fetch (left halo, core vectors
// or element loads past the row's end, right halo), checked, with their values.
template <int S, int P>
struct HostNchwRows {
  using Window = DepthwiseStripNchwWindow<S, P>;
  static constexpr int C = Window::kCols;
  struct Raw {
    float x[C];
  };
  Emulation& e;
  const DepthwiseStripThread& t;
  std::vector<int> fetched;  // per band row

  Raw fetch(int row) {
    const Im2colGeometry& g = e.g;
    if (row < 0 || row >= int(fetched.size()))
      e.fail("fetch of a row outside the band's window");
    else
      ++fetched[std::size_t(row)];
    Raw r{};
    const int iy = depthwise_strip_iy(g, t, 0) + row;
    if (iy < 0 || iy >= g.h) return r;
    const std::int64_t plane = t.image * std::int64_t(g.h) * g.w;
    const int cx = t.ox0 * S, lv = e.s.load_vec;
    auto value = [&](int ix) {
      return e.data.src[std::size_t(plane + std::int64_t(iy) * g.w + ix)];
    };
    if (cx >= 1) {
      e.check_load(plane + std::int64_t(iy) * g.w + cx - 1, 1, "left halo");
      r.x[0] = value(cx - 1);
    }
    if (Window::kRightHalo > 0 && cx + Window::kCore < g.w) {
      e.check_load(plane + std::int64_t(iy) * g.w + cx + Window::kCore, 1, "right halo");
      r.x[C - 1] = value(cx + Window::kCore);
    }
    if (depthwise_strip_core_inside(g, t, Window::kCore)) {
      for (int k = 0; k < Window::kCore; k += lv) {
        e.check_load(plane + std::int64_t(iy) * g.w + cx + k, lv, "core");
        if ((cx + k) % g.w + lv > g.w) e.fail("core vector straddles a row");
        for (int i = 0; i < lv; ++i) r.x[1 + k + i] = value(cx + k + i);
      }
    } else {
      for (int i = 0; i < Window::kCore; ++i)
        if (cx + i < g.w) {
          e.check_load(plane + std::int64_t(iy) * g.w + cx + i, 1, "core element");
          r.x[1 + i] = value(cx + i);
        }
    }
    return r;
  }
  void convert(const Raw& r, float (&x)[C][1]) const {
    for (int j = 0; j < C; ++j) x[j][0] = r.x[j];
  }
  void store(int b, const float (&acc)[P][1]) {
    const Im2colGeometry& g = e.g;
    const int sv = e.s.store_vec;
    const std::int64_t row =
        (t.image * g.oh + t.oy0 + b) * std::int64_t(g.ow) + t.ox0;  // plane == output plane
    for (int q = 0; q < P; q += sv) {
      if (t.ox0 + q + sv <= g.ow) {
        e.write(row + q, sv, &acc[q][0], "vector");
      } else {
        for (int i = 0; i < sv; ++i)
          if (t.ox0 + q + i < g.ow) e.write(row + q + i, 1, &acc[q + i][0], "element");
      }
    }
  }
};

// The kernels' rows for one nhwc thread: one V-channel vector per input pixel of the window.
template <int S, int P, int V>
struct HostNhwcRows {
  static constexpr int C = (P - 1) * S + kDepthwiseStripK;
  struct Raw {
    float x[C][V];
  };
  Emulation& e;
  const DepthwiseStripThread& t;
  std::vector<int> fetched;

  Raw fetch(int row) {
    const Im2colGeometry& g = e.g;
    if (row < 0 || row >= int(fetched.size()))
      e.fail("fetch of a row outside the band's window");
    else
      ++fetched[std::size_t(row)];
    Raw r{};
    const int iy = depthwise_strip_iy(g, t, 0) + row;
    if (iy < 0 || iy >= g.h) return r;
    for (int j = 0; j < C; ++j) {
      const int ix = depthwise_strip_ix(g, t, j);
      if (ix < 0 || ix >= g.w) continue;
      const std::int64_t at = ((t.image * g.h + iy) * std::int64_t(g.w) + ix) * g.c + t.channel;
      e.check_load(at, V, "channel vector");
      for (int i = 0; i < V; ++i) r.x[j][i] = e.data.src[std::size_t(at + i)];
    }
    return r;
  }
  void convert(const Raw& r, float (&x)[C][V]) const {
    for (int j = 0; j < C; ++j)
      for (int i = 0; i < V; ++i) x[j][i] = r.x[j][i];
  }
  void store(int b, const float (&acc)[P][V]) {
    const Im2colGeometry& g = e.g;
    for (int p = 0; p < P; ++p) {
      if (t.ox0 + p >= g.ow) continue;
      const std::int64_t at =
          ((t.image * g.oh + t.oy0 + b) * std::int64_t(g.ow) + t.ox0 + p) * g.oc + t.channel;
      e.write(at, V, acc[p], "channel vector");
    }
  }
};

template <class Rows>
void check_fetched_once(Emulation& e, const Rows& rows, const DepthwiseStripThread& t) {
  for (std::size_t i = 0; i < rows.fetched.size(); ++i)
    if (rows.fetched[i] != 1)
      e.fail("thread at (" + std::to_string(t.image) + ", " + std::to_string(t.oy0) + ", " +
             std::to_string(t.ox0) + "): band row " + std::to_string(i) + " fetched " +
             std::to_string(rows.fetched[i]) + " times");
}

template <int S, int P>
void emulate_nchw_thread(Emulation& e, const DepthwiseStripThread& t) {
  constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;
  float w[kTaps][1];
  for (int tap = 0; tap < kTaps; ++tap)
    w[tap][0] = e.data.wei[std::size_t(t.channel * kTaps + tap)];
  HostNchwRows<S, P> rows{e, t, std::vector<int>(std::size_t((t.rows - 1) * S + 3), 0)};
  depthwise_strip_band<S, P, 1, (kDepthwiseStripK + S - 1) / S>(rows, t.rows, w);
  check_fetched_once(e, rows, t);
}

template <int S, int P, int V>
void emulate_nhwc_thread(Emulation& e, const DepthwiseStripThread& t) {
  constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;
  float w[kTaps][V];
  for (int tap = 0; tap < kTaps; ++tap)
    for (int j = 0; j < V; ++j) w[tap][j] = e.data.wei[std::size_t((t.channel + j) * kTaps + tap)];
  HostNhwcRows<S, P, V> rows{e, t, std::vector<int>(std::size_t((t.rows - 1) * S + 3), 0)};
  depthwise_strip_band<S, P, V, 1>(rows, t.rows, w);
  check_fetched_once(e, rows, t);
}

// The pipelined kernel's rows for one thread: the band rows come from the block's tile, which
// the block's copies fill (depthwise_pipe_copy); `copier` maps each tile vector (col * cvb + cv)
// to the one copy that writes it.
template <int S, int P, int V>
struct HostPipeRows {
  static constexpr int C = (P - 1) * S + kDepthwiseStripK;
  using Raw = int;
  Emulation& e;
  const DepthwisePipeConfig& c;
  const DepthwisePipeBlock& b;
  const DepthwisePipeThread& pt;
  const std::vector<int>& copier;
  std::vector<int> fetched;

  int fetch(int row) {
    if (row < 0 || row >= int(fetched.size()))
      e.fail("fetch of a row outside the band's window");
    else
      ++fetched[std::size_t(row)];
    return row;
  }
  void convert(int row, float (&x)[C][V]) {
    const Im2colGeometry& g = e.g;
    const int iy = depthwise_strip_iy(g, pt.t, 0) + row;
    for (int j = 0; j < C; ++j) {
      const int col = pt.tile_col + j;
      for (int i = 0; i < V; ++i) x[j][i] = 0.0f;
      if (col >= c.tile_cols || copier[std::size_t(col * c.cvb + pt.cv)] < 0) {
        e.fail("window column outside the copied tile");
        continue;
      }
      // The copy's source, as the kernel computes it: tile column col of the block.
      const int ix = b.ix0 + col;
      if (ix != depthwise_strip_ix(g, pt.t, j)) e.fail("tile column is not the window's column");
      if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
      const std::int64_t at = ((std::int64_t(b.n) * g.h + iy) * g.w + ix) * g.c + b.ch0 + pt.cv * V;
      e.check_load(at, V, "cp.async");
      for (int i = 0; i < V; ++i) x[j][i] = e.data.src[std::size_t(at + i)];
    }
  }
  void store(int bb, const float (&acc)[P][V]) {
    if (!pt.stores) return;
    const Im2colGeometry& g = e.g;
    for (int p = 0; p < P; ++p) {
      if (pt.t.ox0 + p >= g.ow) continue;
      const std::int64_t at =
          ((std::int64_t(b.n) * g.oh + b.oy0 + bb) * g.ow + pt.t.ox0 + p) * g.oc + pt.t.channel;
      e.write(at, V, acc[p], "channel vector");
    }
  }
};

template <int S, int P, int V>
void emulate_pipe_block(Emulation& e, const DepthwisePipeConfig& c, int block) {
  const Im2colGeometry& g = e.g;
  const DepthwisePipeBlock b = depthwise_pipe_block(g, c, block);
  // Every tile vector copied by exactly one (thread, copy).
  std::vector<int> copier(std::size_t(c.tile_cols * c.cvb), -1);
  for (int tid = 0; tid < c.threads; ++tid)
    for (int k = 0; k < c.copies; ++k) {
      const DepthwisePipeCopy cp = depthwise_pipe_copy(c, tid, k);
      if (!cp.valid) continue;
      int& who = copier[std::size_t(cp.col * c.cvb + cp.cv)];
      if (who >= 0) e.fail("tile vector copied twice");
      who = tid * kDepthwisePipeMaxCopies + k;
    }
  for (int who : copier)
    if (who < 0) e.fail("tile vector never copied");
  constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;
  for (int tid = 0; tid < c.threads && e.error.empty(); ++tid) {
    const DepthwisePipeThread pt = depthwise_pipe_thread(g, c, b, tid);
    float w[kTaps][V];
    for (int tap = 0; tap < kTaps; ++tap)
      for (int j = 0; j < V; ++j)
        w[tap][j] = e.data.wei[std::size_t((pt.t.channel + j) * kTaps + tap)];
    HostPipeRows<S, P, V> rows{e,  c,      b,
                               pt, copier, std::vector<int>(std::size_t((b.rows - 1) * S + 3), 0)};
    depthwise_strip_band<S, P, V, (kDepthwiseStripK + S - 1) / S>(rows, b.rows, w);
    check_fetched_once(e, rows, pt.t);
  }
}

void emulate_pipe(Emulation& e, const DepthwisePipeConfig& c) {
  for (int block = 0; block < int(c.blocks) && e.error.empty(); ++block) {
    if (c.stride == 1 && c.vec == 4)
      emulate_pipe_block<1, 2, 4>(e, c, block);
    else if (c.stride == 1 && c.vec == 8)
      emulate_pipe_block<1, 1, 8>(e, c, block);
    else if (c.stride == 2 && c.vec == 4)
      emulate_pipe_block<2, 2, 4>(e, c, block);
    else if (c.stride == 2 && c.vec == 8)
      emulate_pipe_block<2, 1, 8>(e, c, block);
    else
      e.fail("no pipelined instantiation for this shape");
  }
}

// Every thread of the grid, through the instantiation the kernels' dispatch picks.
void emulate(Emulation& e) {
  const Im2colGeometry& g = e.g;
  const DepthwiseStripConfig& s = e.s;
  for (int tid = 0; tid < int(s.work) && e.error.empty(); ++tid) {
    const DepthwiseStripThread t = depthwise_strip_thread(g, s, tid);
    if (g.nhwc) {
      const bool v8 = s.load_vec == 8;
      if (s.stride == 1 && s.pixels == 2 && !v8)
        emulate_nhwc_thread<1, 2, 4>(e, t);
      else if (s.stride == 1 && s.pixels == 1 && v8)
        emulate_nhwc_thread<1, 1, 8>(e, t);
      else if (s.stride == 2 && s.pixels == 1 && !v8)
        emulate_nhwc_thread<2, 1, 4>(e, t);
      else if (s.stride == 2 && s.pixels == 1 && v8)
        emulate_nhwc_thread<2, 1, 8>(e, t);
      else
        e.fail("no nhwc instantiation for this shape");
    } else {
      if (s.stride == 1 && s.pixels == 8)
        emulate_nchw_thread<1, 8>(e, t);
      else if (s.stride == 1 && s.pixels == 4)
        emulate_nchw_thread<1, 4>(e, t);
      else if (s.stride == 1 && s.pixels == 7)
        emulate_nchw_thread<1, 7>(e, t);
      else if (s.stride == 2 && s.pixels == 4)
        emulate_nchw_thread<2, 4>(e, t);
      else
        e.fail("no nchw instantiation for this shape");
    }
  }
}
std::string check_emulation(const Problem& p, const Emulation& e) {
  if (!e.error.empty()) return e.error;
  const Im2colGeometry& g = e.g;
  for (std::size_t i = 0; i < e.writes.size(); ++i)
    if (e.writes[i] != 1)
      return "output " + std::to_string(i) + " written " + std::to_string(e.writes[i]) + " times";
  for (int n = 0; n < g.n; ++n)
    for (int oc = 0; oc < g.oc; ++oc)
      for (int oy = 0; oy < g.oh; ++oy)
        for (int ox = 0; ox < g.ow; ++ox) {
          const std::size_t at = std::size_t(act_offset(g.nhwc, n, oc, oy, ox, g.oc, g.oh, g.ow));
          const float want = direct(g, e.data, e.dt, n, oc, oy, ox);
          if (std::memcmp(&want, &e.out[at], sizeof(float)) != 0)
            return "output (" + std::to_string(n) + ", " + std::to_string(oc) + ", " +
                   std::to_string(oy) + ", " + std::to_string(ox) + ") is " +
                   std::to_string(e.out[at]) + ", the (r, s) fmaf sum " + std::to_string(want);
        }
  const bench::Correctness r =
      bench::compare(e.out.data(), e.data.ref.data(), e.out.size(),
                     bench::dot_tolerance(p.dtype, p.reduction_length(), e.data.ref_rms));
  return r.passed ? "" : r.message;
}

TEST(DepthwiseStrip, EmulatedKernelsWriteEveryOutputOnceBitExact) {
  std::vector<Problem> problems = fixed_problems();
  for (const Problem& p : random_problems(40, 77)) problems.push_back(p);
  // MobileNet-v2's maps and strides with 8 channels (the thread shapes are those of the full
  // layers; the channel count only repeats them).
  for (Problem p : mobilenet_dw(1)) {
    p.g = p.ic = p.oc = 8;
    problems.push_back(p);
  }
  int cases = 0;
  for (Problem p : problems)
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      for (DataType dt : {DataType::fp32, DataType::bf16}) {
        p.layout = layout;
        p.dtype = dt;
        const int bytes = bench::storage_bytes(dt);
        const Im2colGeometry g = make_im2col_geometry(p);
        if (!depthwise_strip_unsupported_reason(g, bytes).empty()) continue;
        const HostData data = make_host_data(p, 31);
        const bool big = std::int64_t(p.mb) * p.ic * p.ih * p.iw > 50000;  // automatic only
        std::vector<DepthwiseChoice> choices = {strips()};
        if (layout == Layout::nhwc) choices.push_back(pipe());
        if (!big) {
          const std::vector<DepthwiseChoice> f = forced(g);
          choices.insert(choices.end(), f.begin(), f.end());
          if (layout == Layout::nhwc)
            for (int band : {1, 3, 5}) choices.push_back(pipe(band, band == 3 ? 3 : 0));
        }
        for (const DepthwiseChoice& choice : choices) {
          const DepthwiseConfig c = depthwise_config(g, bytes, kH200Sms, choice);
          if (choice.strip_pixels > 0 && c.strip.pixels == 0) continue;
          ASSERT_EQ(depthwise_config_mismatch(g, bytes, c), "") << p.str();
          Emulation e{g,
                      c.strip,
                      data,
                      dt,
                      std::vector<float>(data.ref.size(), 0.0f),
                      std::vector<int>(data.ref.size(), 0),
                      ""};
          if (c.sub_variant == 3)
            emulate_pipe(e, c.pipe);
          else
            emulate(e);
          EXPECT_EQ(check_emulation(p, e), "") << p.str() << ": " << depthwise_config_name(g, c);
          ++cases;
        }
      }
  EXPECT_GT(cases, 300);
}

}  // namespace
}  // namespace conv
