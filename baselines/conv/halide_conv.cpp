#include "baselines/conv/halide_conv.hpp"

#include <cpuid.h>

#include <limits>
#include <string>

namespace conv {

using Halide::Expr;

Halide::Target halide_host_target() {
  Halide::Target t = Halide::get_host_target();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // CPUID leaf 7, sub-leaf 0: EDX bit 23 is AVX512-FP16.
  const bool avx512_fp16 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 23 & 1u);
  if (t.has_feature(Halide::Target::AVX512_SapphireRapids) && !avx512_fp16)
    t = t.without_feature(Halide::Target::AVX512_SapphireRapids);
  return t;
}

Halide::Type halide_storage_type(DataType dt, bool bf16_as_bits) {
  switch (dt) {
    case DataType::fp16:
      return Halide::Float(16);
    case DataType::bf16:
      return bf16_as_bits ? Halide::UInt(16) : Halide::BFloat(16);
    default:
      return Halide::Float(32);
  }
}

namespace {

// (x, y, c, n) of an activation tensor of C x H x W per image, in p's layout.
std::vector<halide_dimension_t> act_dims(const Problem& p, std::int64_t n, std::int64_t c,
                                         std::int64_t h, std::int64_t w) {
  const auto i32 = [](std::int64_t v) { return static_cast<std::int32_t>(v); };
  if (p.layout == Layout::nhwc)
    return {{0, i32(w), i32(c), 0},
            {0, i32(h), i32(w * c), 0},
            {0, i32(c), 1, 0},
            {0, i32(n), i32(h * w * c), 0}};
  return {{0, i32(w), 1, 0},
          {0, i32(h), i32(w), 0},
          {0, i32(c), i32(h * w), 0},
          {0, i32(n), i32(c * h * w), 0}};
}

// Fixes min, extent and stride of every dimension of a buffer parameter to dims, so that the
// compiled code is specialized to the problem's sizes and layout (this also lifts Halide's
// default constraint that dimension 0 has stride 1, which nhwc breaks).
void constrain(Halide::OutputImageParam param, const std::vector<halide_dimension_t>& dims) {
  Halide::Region estimates;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int d = static_cast<int>(i);
    param.dim(d).set_bounds(dims[i].min, dims[i].extent).set_stride(dims[i].stride);
    estimates.push_back({dims[i].min, dims[i].extent});
  }
  param.set_estimates(estimates);
}

}  // namespace

std::vector<halide_dimension_t> halide_src_dims(const Problem& p) {
  return act_dims(p, p.mb, p.ic, p.ih, p.iw);
}

std::vector<halide_dimension_t> halide_dst_dims(const Problem& p) {
  return act_dims(p, p.mb, p.oc, p.oh(), p.ow());
}

std::vector<halide_dimension_t> halide_wei_dims(const Problem& p) {
  const auto i32 = [](std::int64_t v) { return static_cast<std::int32_t>(v); };
  const std::int64_t icg = p.ic / p.g;
  if (p.layout == Layout::nhwc)  // OHWI
    return {{0, i32(p.kw), i32(icg), 0},
            {0, i32(p.kh), i32(p.kw * icg), 0},
            {0, i32(icg), 1, 0},
            {0, i32(p.oc), i32(p.kh * p.kw * icg), 0}};
  return {{0, i32(p.kw), 1, 0},
          {0, i32(p.kh), i32(p.kw), 0},
          {0, i32(icg), i32(p.kh * p.kw), 0},
          {0, i32(p.oc), i32(icg * p.kh * p.kw), 0}};  // OIHW
}

std::string halide_size_limit(const Problem& p) {
  constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max();
  if (p.src_elements() > limit || p.dst_elements() > limit || p.wei_elements() > limit)
    return "a tensor has more than 2^31-1 elements; Halide buffers index with 32-bit integers";
  return "";
}

HalideConv make_halide_conv(const Problem& p, const HalideConvOptions& options) {
  HalideConv h;
  h.problem = p;
  h.storage = halide_storage_type(p.dtype, options.bf16_as_bits);
  h.src = Halide::ImageParam(h.storage, 4, "src");
  h.wei = Halide::ImageParam(h.storage, 4, "wei");
  constrain(h.src, halide_src_dims(p));
  constrain(h.wei, halide_wei_dims(p));

  const int ih = static_cast<int>(p.ih), iw = static_cast<int>(p.iw);
  const int sh = static_cast<int>(p.sh), sw = static_cast<int>(p.sw);
  const int ph = static_cast<int>(p.ph), pw = static_cast<int>(p.pw);
  const int dh = static_cast<int>(p.dilation_h()), dw = static_cast<int>(p.dilation_w());
  const int icg = static_cast<int>(p.ic / p.g), ocg = static_cast<int>(p.oc / p.g);
  Halide::Var &x = h.x, &y = h.y, &c = h.c, &n = h.n;

  // Inputs as Funcs, clamped into their buffers when the schedule may compute outside.
  const auto region = [](const std::vector<halide_dimension_t>& dims) {
    Halide::Region r;
    for (const halide_dimension_t& d : dims) r.push_back({d.min, d.extent});
    return r;
  };
  const Halide::Func src_in = options.clamp_reads ? Halide::BoundaryConditions::repeat_edge(
                                                        h.src, region(halide_src_dims(p)))
                                                  : Halide::Func(h.src);
  const Halide::Func wei_in = options.clamp_reads ? Halide::BoundaryConditions::repeat_edge(
                                                        h.wei, region(halide_wei_dims(p)))
                                                  : Halide::Func(h.wei);

  // A stored value as fp32, and an fp32 value rounded to the storage type. bf16 bits: the upper
  // half of an fp32 (exact), rounded to nearest even like bench::float_to_bf16_bits.
  const bool bits = options.bf16_as_bits && p.dtype == DataType::bf16;
  const auto to_f32 = [bits](const Expr& v) {
    return bits ? Halide::reinterpret<float>(Halide::cast<std::uint32_t>(v) << 16)
                : Halide::cast<float>(v);
  };
  const auto to_storage = [bits, &h](const Expr& f) {
    if (!bits) return Halide::cast(h.storage, f);
    const Expr u = Halide::reinterpret<std::uint32_t>(f);
    const Expr rounded = Halide::cast<std::uint16_t>((u + (0x7fff + ((u >> 16) & 1))) >> 16);
    return Halide::select(Halide::is_nan(f), Halide::cast<std::uint16_t>((u >> 16) | 0x40),
                          rounded);
  };

  // ---- Algorithm ------------------------------------------------------------------------------
  Halide::Func src_f32("src_f32");
  src_f32(x, y, c, n) = to_f32(src_in(x, y, c, n));
  // Without padding every tap lies inside the image; the boundary condition would only cost.
  h.src_padded = (ph == 0 && pw == 0) ? src_f32
                                      : Halide::BoundaryConditions::constant_exterior(
                                            src_f32, 0.0f, {{0, iw}, {0, ih}});
  h.weight = Halide::Func("weight");
  h.weight(h.s, h.r, h.icg, c) = to_f32(wei_in(h.s, h.r, h.icg, c));

  h.k = Halide::RDom(0, static_cast<int>(p.kw), 0, static_cast<int>(p.kh), 0, icg, "k");
  const Expr in_x = x * sw - pw + h.k.x * dw;
  const Expr in_y = y * sh - ph + h.k.y * dh;
  const Expr in_c = p.g == 1 ? Expr(h.k.z) : (c / ocg) * icg + h.k.z;

  h.acc = Halide::Func("acc");
  h.acc(x, y, c, n) = 0.0f;
  h.acc(x, y, c, n) += h.src_padded(in_x, in_y, in_c, n) * h.weight(h.k.x, h.k.y, h.k.z, c);

  h.output = Halide::Func("conv");
  h.output(x, y, c, n) = to_storage(h.acc(x, y, c, n));
  // ---- End of algorithm -----------------------------------------------------------------------

  constrain(h.output.output_buffer(), halide_dst_dims(p));
  h.output.set_estimates({{0, static_cast<int>(p.ow())},
                          {0, static_cast<int>(p.oh())},
                          {0, static_cast<int>(p.oc)},
                          {0, static_cast<int>(p.mb)}});
  return h;
}

}  // namespace conv
