// The index math and the per-thread algorithm of the depthwise strip kernels
// (conv/cuda/depthwise_strip_kernels.cu, sub-variant 8.2), shared with their CPU emulation in
// tests/conv/test_depthwise_config.cpp: the same code decides which outputs a thread writes, which
// input rows and columns it loads, and which partial sum each loaded row feeds with which tap.
// Host and device (MYCONV_HD); the memory accesses are the caller's (a Rows type, below), so the
// kernels do vector loads and conversions and the emulation checks alignment, bounds and values.
#pragma once

#include <cstdint>

#include "conv/cuda/depthwise_strip_config.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"

// Full unrolling in the device pass (the partial sums' slots are then registers); nothing in
// host passes, where the pragma is unknown.
#if defined(__CUDA_ARCH__)
#define MYCONV_STRIP_UNROLL _Pragma("unroll")
#else
#define MYCONV_STRIP_UNROLL
#endif

namespace conv {

// What thread `tid` (< s.work) computes: channels, band of output rows, strip of output columns.
// Threads run along channel vectors (nhwc), then strips, then bands, then images (planes in
// nchw): a warp's loads of one input row are contiguous, and a block's neighbouring strips share
// their halo columns through L1.
struct DepthwiseStripThread {
  std::int64_t image = 0;  // nhwc: n; nchw: plane n * C + c
  int channel = 0;         // nhwc: first channel of the vector; nchw: c
  int oy0 = 0, rows = 0;   // first output row of the band, and its rows (<= band)
  int ox0 = 0;             // first output column of the strip
};
MYCONV_HD DepthwiseStripThread depthwise_strip_thread(const Im2colGeometry& g,
                                                      const DepthwiseStripConfig& s, int tid) {
  DepthwiseStripThread t;
  int rest = tid;
  if (g.nhwc) {
    const int cv = rest % s.channel_vectors;
    rest /= s.channel_vectors;
    t.channel = cv * s.load_vec;
  }
  const int strip = rest % s.strips;
  rest /= s.strips;
  const int band = rest % s.bands;
  rest /= s.bands;
  t.image = rest;
  if (!g.nhwc) t.channel = rest % g.c;
  t.oy0 = band * s.band;
  t.rows = g.oh - t.oy0 < s.band ? g.oh - t.oy0 : s.band;
  t.ox0 = strip * s.pixels;
  return t;
}

// Input row of the band's row t (t = 0 .. (rows - 1) * S + 2), and input column of window
// column j (j = 0 .. (P - 1) * S + 2); outside [0, H) x [0, W) they are padding.
MYCONV_HD int depthwise_strip_iy(const Im2colGeometry& g, const DepthwiseStripThread& t, int row) {
  return t.oy0 * g.sh - g.ph + row;
}
MYCONV_HD int depthwise_strip_ix(const Im2colGeometry& g, const DepthwiseStripThread& t, int col) {
  return t.ox0 * g.sw - g.pw + col;
}

// nchw: the window columns of a strip are one halo column (left, ix = ox0*S - 1), the core of P*S
// columns starting at ix = ox0*S (LV-element vectors, aligned: LV divides W and P*S), and, at
// stride 1, one halo column on the right. The core is one run of vector loads where it lies
// inside the row (`core_inside`), else loaded element by element with bounds checks (the last
// strip of a row whose OW is not a multiple of P).
template <int S, int P>
struct DepthwiseStripNchwWindow {
  static constexpr int kCols = (P - 1) * S + kDepthwiseStripK;
  static constexpr int kCore = P * S;
  static constexpr int kRightHalo = kCols - 1 - kCore;  // 1 at stride 1, 0 at stride 2
};
MYCONV_HD bool depthwise_strip_core_inside(const Im2colGeometry& g, const DepthwiseStripThread& t,
                                           int core) {
  return t.ox0 * g.sw + core <= g.w;
}

// The thread's band, computed from its input rows loaded once each. Rows is the caller's:
//   typename Rows::Raw;                       the registers of one input row's loads
//   Raw fetch(int row);                       issue the loads of band row `row` (zeros outside
//                                             the image; depthwise_strip_iy)
//   void convert(const Raw&, float (&x)[C][V]);  window columns of the row as floats
//   void store(int b, const float (&out)[P][V]);  output row oy0 + b of the strip
// C = (P - 1) * S + 3. An input row feeds up to L = ceil(3 / S) output rows, whose partial sums
// stay in registers (acc[L], rotating: output row b in slot b % L); each output row's sum starts
// at its tap (0, 0) and adds its taps in (r, s) order with fmaf, as the other depthwise kernels.
// The loads run A output rows (A * S input rows; A = 1 or L) ahead of their use, in a ring of A
// slots: step b converts the rows slot b % A holds and refills that slot with step b + A's rows
// (before its FMAs where A = 1, after them otherwise), so about A * S input rows per thread are
// in flight while it computes.
template <int S, int P, int V, int A, class Rows>
MYCONV_HD void depthwise_strip_band(Rows& rows, int band_rows,
                                    const float (&w)[kDepthwiseStripK * kDepthwiseStripK][V]) {
  constexpr int K = kDepthwiseStripK;
  constexpr int L = (K + S - 1) / S;
  constexpr int C = (P - 1) * S + K;
  constexpr int kPro = K - S;  // rows of output row 0 before its last S
  static_assert(S >= 1 && S < K, "the strip's rows assume 1 <= S < K");
  static_assert(A >= 1 && L % A == 0, "the load ring's period divides the sums' period");
  using Raw = typename Rows::Raw;

  float acc[L][P][V];
  MYCONV_STRIP_UNROLL
  for (int l = 0; l < L; ++l) MYCONV_STRIP_UNROLL
  for (int p = 0; p < P; ++p) MYCONV_STRIP_UNROLL
  for (int j = 0; j < V; ++j) acc[l][p][j] = 0.0f;

  // Input row `row` (relative to the base row of output row `step`, step % L == phase) into the
  // partial sums of the output rows it feeds: slot (phase + l) % L with tap row r = row - l * S.
  auto add = [&](const float(&x)[C][V], int row, int phase) {
    MYCONV_STRIP_UNROLL
    for (int l = 0; l < L; ++l) {
      const int r = row - l * S;
      if (r < 0 || r >= K) continue;
      const int slot = (phase + l) % L;
      MYCONV_STRIP_UNROLL
      for (int s = 0; s < K; ++s) MYCONV_STRIP_UNROLL
      for (int p = 0; p < P; ++p) MYCONV_STRIP_UNROLL
      for (int j = 0; j < V; ++j) {
        const float a = (r == 0 && s == 0) ? 0.0f : acc[slot][p][j];
        acc[slot][p][j] = fmaf(x[p * S + s][j], w[r * K + s][j], a);
      }
    }
  };

  // Output row 0's first rows, and the S rows of each of the first A steps.
  Raw pro[kPro]{};
  Raw ring[A][S]{};  // value-initialized: slots past a short band stay unread
  MYCONV_STRIP_UNROLL
  for (int t = 0; t < kPro; ++t) pro[t] = rows.fetch(t);
  MYCONV_STRIP_UNROLL
  for (int q = 0; q < A; ++q)
    if (q < band_rows) {
      MYCONV_STRIP_UNROLL
      for (int u = 0; u < S; ++u) ring[q][u] = rows.fetch(q * S + kPro + u);
    }
  MYCONV_STRIP_UNROLL
  for (int t = 0; t < kPro; ++t) {
    float x[C][V];
    rows.convert(pro[t], x);
    add(x, t, 0);
  }
  for (int b = 0; b < band_rows; b += L) {
    MYCONV_STRIP_UNROLL
    for (int phase = 0; phase < L; ++phase) {
      const int step = b + phase;
      if (step >= band_rows) break;
      if constexpr (A == 1) {
        // One row ahead: the next loads go out before this step's FMAs, so all S rows are
        // converted first.
        float x[S][C][V];
        MYCONV_STRIP_UNROLL
        for (int u = 0; u < S; ++u) rows.convert(ring[0][u], x[u]);
        if (step + 1 < band_rows) {
          MYCONV_STRIP_UNROLL
          for (int u = 0; u < S; ++u) ring[0][u] = rows.fetch((step + 1) * S + kPro + u);
        }
        MYCONV_STRIP_UNROLL
        for (int u = 0; u < S; ++u) add(x[u], kPro + u, phase);
      } else {
        // A rows ahead: one row's floats live at a time, the slot refilled after its FMAs.
        MYCONV_STRIP_UNROLL
        for (int u = 0; u < S; ++u) {
          float x[C][V];
          rows.convert(ring[phase % A][u], x);
          add(x, kPro + u, phase);
        }
        if (step + A < band_rows) {
          MYCONV_STRIP_UNROLL
          for (int u = 0; u < S; ++u) ring[phase % A][u] = rows.fetch((step + A) * S + kPro + u);
        }
      }
      rows.store(step, acc[phase]);
    }
  }
}

}  // namespace conv
